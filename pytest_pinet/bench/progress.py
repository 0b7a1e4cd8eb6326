"""Progress of a bench on stderr; the figures themselves go to stdout."""

from __future__ import annotations

import sys


def say(text: str) -> None:
    """One line of progress as the bench goes (a full bench takes about 12 minutes)."""
    print(f"bench: {text}", file=sys.stderr, flush=True)
