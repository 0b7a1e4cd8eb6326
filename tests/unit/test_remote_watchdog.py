"""A remote command never waits for ever: a hung host keeps its TCP connection but never
answers the request to open a channel, and paramiko waits for that answer without end (a
queue sampler once waited so through a whole run).  RemoteHost closes the connection under
a command that outlives its timeout and says so as a ``timeout`` lab fault."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host import remote
from pytest_pinet.host.remote import RemoteHost, SshEndpoint


class _Transport:
    def __init__(self, closed: threading.Event) -> None:
        self._closed = closed

    def close(self) -> None:
        self._closed.set()


class _Client:
    def __init__(self, closed: threading.Event) -> None:
        self.transport = _Transport(closed)

    def get_transport(self) -> _Transport:
        return self.transport


class _HungConnection:
    """A connection to a host that never answers: run() returns only when the transport is
    closed under it, raising as paramiko's waiter does then."""

    is_connected = True

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.client = _Client(self.closed)

    def run(self, command: str, **_: Any) -> Any:
        if not self.closed.wait(timeout=30):
            raise AssertionError("nobody closed the connection under the stuck command")
        raise EOFError("Channel closed.")

    def close(self) -> None:
        self.closed.set()


def _host(connection: Any) -> RemoteHost:
    endpoint = SshEndpoint("qpi", "10.203.9.2", "root", 22, None, Path("/nonexistent/known_hosts"))
    host = RemoteHost(endpoint)
    host._connection = connection
    return host


def test_a_command_to_a_hung_host_ends_as_a_timeout_fault(monkeypatch):
    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.2)
    hung = _HungConnection()
    started = time.monotonic()
    with pytest.raises(LabFault) as fault:
        _host(hung).run(["tc", "-s", "qdisc", "show", "dev", "eth1"], timeout=0.3)
    waited = time.monotonic() - started
    assert fault.value.category == "timeout"
    assert "connection closed" in str(fault.value) and "tc -s qdisc show dev eth1" in str(fault.value)
    assert hung.closed.is_set()
    assert 0.5 <= waited < 10  # timeout + grace, not for ever


class _Quick:
    is_connected = True

    def __init__(self) -> None:
        self.client = _Client(threading.Event())

    def run(self, command: str, **_: Any) -> Any:
        class Result:
            exited, stdout, stderr = 0, "ok\n", ""

        return Result()


def test_a_command_that_answers_in_time_leaves_the_connection_open(monkeypatch):
    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.05)
    quick = _Quick()
    assert _host(quick).check(["echo", "ok"], timeout=0.05) == "ok\n"
    for thread in threading.enumerate():  # every watchdog has ended: fired or cancelled
        if thread.name == "pinet-ssh-watchdog":
            thread.join(timeout=5)
    assert not quick.client.transport._closed.is_set()  # it was cancelled: it never fired


def test_after_a_hang_clean_ups_are_not_sent_until_the_host_answers_or_is_cycled(monkeypatch):
    # A hung board cost each clean-up after it (stop the server, stop the probe's server,
    # collect evidence) another 10 s of waiting: three of them after every hang.
    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.2)
    hung = _HungConnection()
    host = _host(hung)
    with pytest.raises(LabFault):
        host.run(["iperf3", "-c", "10.204.9.2"], timeout=0.3)
    sent: list[str] = []

    class _Counting(_Quick):
        def run(self, command: str, **kwargs: Any) -> Any:
            sent.append(command)
            return super().run(command, **kwargs)

    host._connection = _Counting()  # were it asked, it would answer: it must not be asked
    started = time.monotonic()
    with pytest.raises(LabFault) as skipped:
        host.run(["kill", "1234"], timeout=5, cleanup=True)
    assert time.monotonic() - started < 0.5 and sent == []
    assert skipped.value.category == "timeout"
    assert "not sent: it gave no answer within" in str(skipped.value) and "kill 1234" in str(skipped.value)
    # Anything else is still asked (a boot's wait for SSH must not end at the first silence),
    # and an answer clears the memory: clean-ups go out again.
    assert host.run(["true"], timeout=5).stdout == "ok\n" and sent == ["true"]
    assert host.run(["kill", "1234"], timeout=5, cleanup=True).ok


def test_a_retry_that_cannot_connect_keeps_the_silence(monkeypatch):
    """A sampler retried on a hung board after its silence was noted.  While that reconnect
    waited out its 10 s the silence was forgotten, so the evidence and a restore after it
    waited 10 s each (25 s in a rack trial).  A reconnect is no answer: the clean-ups sent
    meanwhile are not sent."""
    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.2)
    host = _host(_HungConnection())
    with pytest.raises(LabFault):
        host.run(["tc", "-s", "qdisc", "show"], timeout=0.3)
    connecting, give_up = threading.Event(), threading.Event()

    def no_banner() -> Any:
        connecting.set()
        give_up.wait(timeout=10)
        raise LabFault("unreachable", "cannot reach qpi: timed out", "qpi")

    monkeypatch.setattr(host, "_connect", no_banner)
    retried: list[BaseException] = []

    def sampler() -> None:
        try:
            host.run(["tc", "-s", "qdisc", "show"], timeout=5)  # not a clean-up: it is tried
        except LabFault as fault:
            retried.append(fault)

    retry = threading.Thread(target=sampler)
    retry.start()
    assert connecting.wait(timeout=5)
    started = time.monotonic()
    try:
        with pytest.raises(LabFault, match="not sent"):
            host.run(["sh", "-c", "uptime"], timeout=5, cleanup=True)
        assert time.monotonic() - started < 0.5
    finally:
        give_up.set()
        retry.join(timeout=10)
    assert len(retried) == 1 and "timed out" in str(retried[0])


def test_closing_the_connection_from_outside_forgets_the_silence(monkeypatch):
    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.2)
    host = _host(_HungConnection())
    with pytest.raises(LabFault):
        host.run(["sleep", "1"], timeout=0.3)
    host.close()  # as a power-cycle of the place does first
    host._connection = _Quick()
    assert host.run(["kill", "1234"], timeout=5, cleanup=True).ok


def test_a_silent_host_s_settings_are_not_restored_but_named(monkeypatch):
    """After a hang whose recovery failed, each restore of the board's qdisc and forwarding
    waited out 10 s (18 s in a rack trial); a power-cycle wipes them anyway."""
    from pytest_pinet.host.profiles import AppliedProfile, Profile
    from pytest_pinet.host.tunables import Tunable

    restored: list[str] = []

    class Knob(Tunable):
        def __init__(self, name: str) -> None:
            self.name = name

        def describe(self) -> str:
            return f"knob {self.name}"

        def read(self, host: Any) -> Any:
            return "0"

        def apply(self, host: Any) -> None:
            pass

        def restore(self, host: Any, saved: Any) -> None:
            restored.append(f"{host.name}:{self.name}")

        def is_applied(self, host: Any) -> bool:
            return True

    monkeypatch.setattr(remote, "STUCK_GRACE_S", 0.2)
    board = _host(_HungConnection())
    with pytest.raises(LabFault):
        board.run(["tc", "qdisc", "show"], timeout=0.3)
    peer = _host(_Quick())
    peer.endpoint = SshEndpoint("pc", "10.203.9.3", "root", 22, None, Path("/nonexistent/known_hosts"))
    applied = AppliedProfile(
        Profile("route", "a routed test"), [(Knob("qdisc"), board, "x"), (Knob("route"), peer, "y")]
    )
    problems = applied.restore()
    assert restored == ["pc:route"]  # the answering host is put back
    (problem,) = problems
    assert problem.startswith("qpi: knob qdisc not restored: it gave no answer within"), problem


def test_a_host_that_cannot_give_evidence_is_not_asked_its_restores(monkeypatch):
    """A board hung under a run whose own commands came back with no exit status (its TCP
    still up): the evidence after the fault found no answer, and each restore after it
    still waited 10 s (a rack trial).  The evidence's silence now counts."""
    from pytest_pinet.lab.recovery import LabRecovery

    board, peer = _host(_Quick()), _host(_Quick())
    monkeypatch.setattr(board, "run_shell", _raising_timeout)
    recovery = LabRecovery(
        lambda: (cast(Any, None), {"qpi": board, "pc": peer}), lambda _name: None, _ignore, _ignore
    )
    found = recovery.evidence()
    assert found["qpi"].startswith("no answer") and found["pc"] == "ok\n"
    assert board.silent is not None and "evidence" in board.silent
    assert peer.silent is None  # the host that answered is asked everything as before


def _raising_timeout(script: str, **_: Any) -> Any:
    raise LabFault("timeout", f"qpi: `{script}` still running after 5 s", "qpi")


def _ignore(*_: Any) -> None:
    return None
