"""Error types shared by the core packages.

Two families matter to a lab: a *configuration* error (the user's files are wrong: stop and say
which file, which key and what to do) and a *lab fault* (a host, link or tool misbehaved: not a
regression of the thing under test, so it must never be reported as one).
"""

from __future__ import annotations

from pathlib import Path

SOURCE_DOCS = Path(__file__).resolve().parents[1] / "docs"  # a clone's, or an unpacked sdist's


def doc(name: str) -> str:
    """Where the user reads more, as a path they have: the docs beside the package in a clone
    or an unpacked sdist, else where the installed wheel's user finds them: pytest-pinet is on
    no package index, so a lab's wheel was built from a clone of its repository, whose docs/
    it is (docs/nightly.md, "Getting the package")."""
    here = SOURCE_DOCS / name
    if here.is_file():
        return str(here)
    return f"docs/{name} in the pytest-pinet repository the lab's wheel was built from"


class PinetError(Exception):
    """Base of every error pytest-pinet raises on purpose."""


class ConfigError(PinetError):
    """A user-supplied file or option is invalid.

    The message always names the source (file and key) so the fix is obvious without a
    traceback.
    """

    def __init__(self, source: str, message: str, fix: str | None = None) -> None:
        self.source = source
        self.detail = message
        self.fix = fix
        text = f"{source}: {message}"
        if fix:
            text += f" ({fix})"
        super().__init__(text)


class LabFault(PinetError):
    """The lab, not the device under test, failed: unreachable host, dead tool, busy server.

    ``category`` is a short stable word used by reports to group faults.
    """

    def __init__(self, category: str, message: str, host: str | None = None) -> None:
        self.category = category
        self.host = host  # the host that misbehaved, where known: recovery starts there
        self.recorded = False  # True once kept as a fact of the run (by recovery)
        self.evidence: dict[str, str] = {}  # what the failing step saw (a cut-short output)
        super().__init__(f"lab fault ({category}): {message}")


class MissingToolError(PinetError):
    """A program, an extra or a privilege the command needs is missing; the message says how
    to get it (exit status 11, a missing prerequisite: the lab's to fix, not a board's)."""


class MissingExtra(ConfigError, MissingToolError):
    """An extra of pytest-pinet is not installed where it is needed: a setting (named by its
    source) that cannot be honoured, and a prerequisite the runner lacks; ``pinet`` exits 11
    for it, pytest with its usage error (4)."""


class Unsupported(PinetError):
    """The host cannot take this tunable, qdisc or filesystem; ``reason`` says why.

    Not a failure of the board: the test is skipped with the reason and the fact recorded, so
    the summary shows what a board could not be measured under.
    """

    def __init__(self, tunable: str, host: str, reason: str) -> None:
        self.tunable = tunable
        self.host = host
        self.reason = reason
        super().__init__(f"{host}: {tunable} unsupported: {reason}")
