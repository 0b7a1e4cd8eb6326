"""Reserve, acquire and release places of a labgrid coordinator (through ``labgrid-client``).

The command line client is used rather than labgrid's internal gRPC session: each call is a
fresh connection (a long-lived session goes stale when the coordinator restarts), and it
keeps labgrid's own checks (reserved-for, acquired-by).  Facts this module relies on
(labgrid 25/26):

- ``reserve --wait --shell TAGS`` prints ``export LG_TOKEN=TOKEN``; ``-p +TOKEN`` then names
  the place allocated to it, whose name ``show`` prints first as ``Place 'NAME':``.
- A released reservation still blocks its place until it expires: always cancel it.
- Locks never expire (labgrid #1739): a holder that dies keeps its place, so every way out
  of a run releases, and the controller releases what dead workers held.
- A restarted coordinator forgets every acquisition and reservation; clients get "Could not
  connect" while it is down.  Calls are retried for a while, so a restart during a run is a
  recorded lab fault, not a lost run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabFault
from ..polling import poll_for

TOKEN_LINE = re.compile(r"^export LG_TOKEN=([A-Z0-9]+)\s*$", re.MULTILINE)
PLACE_LINE = re.compile(r"^Place '([^']+)':", re.MULTILINE)
UNAVAILABLE = ("Could not connect to coordinator", "coordinator is unavailable", "UNAVAILABLE")


def client_program() -> str:
    """``labgrid-client`` next to this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).with_name("labgrid-client")
    if beside.exists():
        return str(beside)
    found = shutil.which("labgrid-client")
    if not found:
        raise LabFault("coordinator", "labgrid-client is not installed (pip install labgrid)")
    return found


class Client:
    """``labgrid-client`` against one coordinator, with retries while it is unreachable."""

    def __init__(self, address: str, patience: float = 90.0) -> None:
        self.address = address
        self.patience = patience  # how long a coordinator may be away (a restart takes seconds)
        self.reconnects = 0  # calls that had to wait for the coordinator: evidence of a restart

    def run(self, args: Sequence[str], *, timeout: float = 60.0, check: bool = True) -> str:
        """Run one client command; return its stdout.  Waits out an unreachable coordinator."""
        argv = [client_program(), "-x", self.address, *args]
        last = [""]
        attempts: list[subprocess.CompletedProcess[str]] = []

        def once() -> subprocess.CompletedProcess[str] | None:
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=timeout, check=False, env=_client_env()
                )
            except subprocess.TimeoutExpired:
                raise LabFault(
                    "coordinator", f"labgrid-client {' '.join(args)} still running after {timeout:.0f} s"
                ) from None
            attempts.append(done)
            last[0] = (done.stderr + done.stdout).strip()
            away = done.returncode != 0 and any(mark in last[0] for mark in UNAVAILABLE)
            return None if away else done

        def unreachable() -> LabFault:
            return LabFault(
                "coordinator",
                f"coordinator {self.address} unreachable for {self.patience:.0f} s: {last[0][-300:]}",
            )

        done = poll_for(once, timeout=self.patience, pace=1.0, on_timeout=unreachable)
        assert done is not None  # poll_for raises on timeout
        if len(attempts) > 1:
            self.reconnects += 1
        if check and done.returncode != 0:
            raise LabFault("coordinator", f"labgrid-client {' '.join(args)} failed: {last[0][-500:]}")
        return done.stdout

    def reserve_and_acquire(self, tags: Sequence[str], run_id: str, wait: float = 3600.0) -> Reservation:
        """Reserve a place carrying ``tags`` (waiting for one to be free), acquire it, name it."""
        if not tags:
            raise LabFault("coordinator", "no place tags given: set --pinet-place-tags KEY=VALUE,...")
        out = self.run(["reserve", "--wait", "--shell", *tags], timeout=wait)
        match = TOKEN_LINE.search(out)
        if not match:
            raise LabFault("coordinator", f"reserve printed no token: {out.strip()[:200]!r}")
        token = match.group(1)
        try:
            self.run(["-p", f"+{token}", "acquire"])
            place = self.place_of(token)
        except BaseException:
            self.run(["cancel-reservation", token], check=False)
            raise
        return Reservation(self, token, place, run_id)

    def place_of(self, token: str) -> str:
        """The place allocated to reservation ``token``."""
        out = self.run(["-p", f"+{token}", "show"])
        match = PLACE_LINE.search(out)
        if not match:
            raise LabFault("coordinator", f"show printed no place for reservation {token}: {out[:200]!r}")
        return match.group(1)

    def holder(self, place: str) -> str | None:
        """Who holds ``place`` ("host/user"), or None when nobody does."""
        out = self.run(["-p", place, "show"], check=False)
        match = re.search(r"^\s*acquired: (\S+)", out, re.MULTILINE)
        holder = match.group(1) if match else None
        return None if holder in (None, "None") else holder

    def release_stale(self, place: str, token: str) -> bool:
        """Release a place a dead process of this run held; return True if it was still held."""
        held = self.holder(place) is not None
        if held:
            self.run(["-p", place, "release", "--kick"], check=False)
        if token:
            self.run(["cancel-reservation", token], check=False)
        return held


def _client_env() -> dict[str, str]:
    """The client's environment without a token or place of an outer shell steering it."""
    env = dict(os.environ)
    for name in ("LG_TOKEN", "LG_PLACE"):
        env.pop(name, None)
    return env


@dataclass
class Reservation:
    """A place this process reserved and acquired; :meth:`release` gives both back."""

    client: Client
    token: str
    place: str
    run_id: str

    def still_held(self) -> bool:
        """True while the coordinator still counts the place as acquired (a restart drops it)."""
        return self.client.holder(self.place) is not None

    def release(self) -> bool:
        """Release the place and cancel the reservation; return False if the coordinator had
        already dropped the acquisition (it was restarted)."""
        held = self.still_held()
        if held:
            self.client.run(["-p", self.place, "release"], check=False)
        self.client.run(["cancel-reservation", self.token], check=False)
        return held
