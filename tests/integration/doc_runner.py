"""Run a page's command blocks in order, as a lab engineer types them into one terminal.

A page marks each fenced block by its info string:

- ```` ```sh ````: run on the controller, in the lab's repository;
- ```` ```sh hardware ````: needs a real lab (a password login, an SD card); skipped, and
  named as skipped;
- ```` ```sh on-each-host ````: run on every host, as the login user, in its home;
- ```` ```sh packages ````: ``apt-get install`` lines; every package named must be installed
  (the twin's hosts are this machine, whose packages CI does not change mid-run);
- ```` ```nft ````, ```` ```sudoers ````, ```` ```ini ````: files a page tells a lab to
  install; the rehearsal installs them its own way (a hook per kind);
- ```` ```sh ci-runner ````: what a lab does once its CI holds the key (an edit of its env
  files); handed to the rehearsal's hook, which runs it before the CI nights;
- anything else (```` ```yaml ````, a bare ```` ``` ````): text to read, never run.

A command whose comment says ``exits N`` (``pinet regressions``: 9 while any is pending)
passes with that status too.  The blocks share one shell's state: each runs in ``bash -e`` after the exports and the
directory the previous one left, as a terminal keeps them.  The page's addresses, users and
paths are replaced by the rehearsal's map first (docs/rehearsal.md).  A block that fails
stops the run with the page, the line of the failing command and its output.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.S | re.M)
EXITS = re.compile(r"^(?P<command>[^#\n]*?\S)(?P<comment>\s+#[^\n]*\bexits (?P<code>\d+)\b[^\n]*)$", re.M)
APT_LINE = re.compile(r"^\s*apt-get install\s+([^#\n]+)", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts, its kind and its text."""

    page: Path
    line: int  # of its first text line in the page
    kind: str
    text: str

    @property
    def name(self) -> str:
        """The block as a reader finds it: page, line, first command."""
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        return f"{self.page.name}:{self.line}: {first[:70]}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start(2)) + 1
        found.append(Block(page, line, match.group(1).strip(), match.group(2)))
    return found


class DocFailure(AssertionError):
    """A page's command failed: the message names the page and the line."""


@dataclass
class DocRunner:
    """Runs blocks in ``cwd`` with ``env``, carrying exports and the directory across them."""

    cwd: Path
    env: dict[str, str]
    substitute: Callable[[str], str]
    on_host: Callable[[Block, str], None] | None = None  # for ```sh on-each-host
    installs: dict[str, Callable[[Block, str], None]] = field(default_factory=dict)
    # Environment a block holding the key's text runs with, beside ``env``.
    env_for: dict[str, dict[str, str]] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    background: list[int] = field(default_factory=list)
    timeout: float = 900

    def run_page(self, page: Path, *, after: dict[str, Callable[[], None]] | None = None) -> None:
        """Every block of ``page`` in order; ``after``: a hook run after the block holding a
        text (a lab engineer's edit between two commands)."""
        for block in blocks(page):
            self.run_block(block)
            for marker, hook in (after or {}).items():
                if marker in block.text:
                    hook()

    def run_block(self, block: Block) -> None:
        text = self.substitute(block.text)
        if block.kind == "sh hardware":
            self.skipped.append(block.name)
        elif block.kind == "sh on-each-host":
            assert self.on_host is not None, f"{block.name}: no hosts to run it on"
            self.on_host(block, text)
            self.ran.append(block.name)
        elif block.kind == "sh packages":
            self._packages(block, text)
            self.ran.append(block.name)
        elif block.kind == "sh":
            self._shell(block, text)
            self.ran.append(block.name)
        elif block.kind in self.installs:
            self.installs[block.kind](block, text)
            self.ran.append(block.name)

    def _packages(self, block: Block, text: str) -> None:
        names = [name for line in APT_LINE.findall(text) for name in line.split()]
        assert names, f"{block.name}: no apt-get install line"
        missing = [
            name
            for name in names
            if "install ok installed"
            not in subprocess.run(
                ["dpkg-query", "-W", "-f", "${Status}", name], capture_output=True, text=True, check=False
            ).stdout
        ]
        if missing:
            raise DocFailure(
                f"{block.name}: not installed here: {', '.join(missing)} (scripts/setup.sh --tests)"
            )

    def _shell(self, block: Block, text: str) -> None:
        text = EXITS.sub(lambda m: f"{m['command']} || [ $? -eq {m['code']} ]{m['comment']}", text)
        state = self.cwd / ".doc-runner-env"
        where = self.cwd / ".doc-runner-cwd"
        here = where.read_text(encoding="utf-8").strip() if where.exists() else str(self.cwd)
        # After the shell's state, what this block alone runs with (on the same line, so the
        # preamble stays three lines long).
        extra = {k: v for marker, env in self.env_for.items() if marker in block.text for k, v in env.items()}
        exports = "".join(f"; export {k}={_q(v)}" for k, v in extra.items())
        restore = "".join(f"export {k}={_q(self.env.get(k, ''))}; " for k in extra)
        script = (
            f"trap 'echo \"doc-runner: failed at line $LINENO\" >&2' ERR\n"
            f"cd {_q(here)}\n"
            f"[ -f {_q(str(state))} ] && . {_q(str(state))}{exports}\n"
            f"{text}\n"
            f"{restore}export -p > {_q(str(state))}; pwd > {_q(str(where))}\n"
        )
        # Files, not pipes: a service a block starts with ``&`` keeps its output open.
        number = len(self.ran) + len(self.skipped)
        out_file, err_file = self.cwd / f".doc-runner-{number}.out", self.cwd / f".doc-runner-{number}.err"
        with out_file.open("w") as out_handle, err_file.open("w") as err_handle:
            process = subprocess.Popen(
                ["bash", "-e", "-c", script],
                cwd=here,
                env=self.env,
                stdout=out_handle,
                stderr=err_handle,
                text=True,
                start_new_session=True,  # what it leaves in the background goes with the rehearsal
            )
        self.background.append(process.pid)
        started = time.monotonic()
        try:
            process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        out, err = out_file.read_text(errors="replace"), err_file.read_text(errors="replace")
        if process.returncode is None or process.returncode < 0:
            raise DocFailure(f"{block.name}: still running after {self.timeout:.0f} s\n{out[-3000:]}")
        log = self.cwd / "doc-runner.log"
        with log.open("a", encoding="utf-8") as handle:
            took = time.monotonic() - started
            handle.write(f"=== {block.name} ({took:.1f} s)\n{text}\n--- stdout\n{out}\n--- stderr\n{err}\n")
        if process.returncode != 0:
            failed = re.findall(r"doc-runner: failed at line (\d+)", err)
            line = block.line + int(failed[-1]) - 4 if failed else block.line  # 3 lines of preamble
            raise DocFailure(
                f"{block.page.name}:{line}: exit {process.returncode}: "
                f"{_line_of(block, line)}\n--- stdout\n{out[-4000:]}\n--- stderr\n{err[-3000:]}"
            )

    def stop_background(self) -> None:
        """End what the blocks left running (the services a page starts with ``&``)."""
        for pid in self.background:
            try:
                os.killpg(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue


def _line_of(block: Block, line: int) -> str:
    lines = block.page.read_text(encoding="utf-8").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
