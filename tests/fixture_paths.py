"""Where this repository's tests find their inputs: the recorded outputs under ``fixtures/``
(one folder per kind, fixtures/README.md) and the example lab under ``lab/``, named once so
that a move of either is one edit, not forty."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
IPERF3 = FIXTURES / "iperf3"
LAB_OUTPUTS = FIXTURES / "lab-outputs"
BSD_OUTPUTS = FIXTURES / "bsd"
QNX_OUTPUTS = FIXTURES / "qnx"
# What a lab engineer copies (env files, coordinated exporter and places, CI recipes, example
# key and known_hosts): the tests read it as an example to check, never as their own lab.
LAB = REPO / "lab"
EXAMPLE_ENV = LAB / "rpi-lab.yaml"
RECIPES = LAB / "ci"
# Dated evidence of how pinet performed (bench outputs, recorded nights), beside the
# performance page: not a test input, but some tests check that it still parses.
EVIDENCE = REPO / "docs" / "evidence"


def sourced(folder: Path, pattern: str = "*") -> list[Path]:
    """The files of ``folder`` that came from other people's machines: those its ``SOURCES.md``
    names (our own recordings beside them are listed in its README.md instead)."""
    text = (folder / "SOURCES.md").read_text(encoding="utf-8")
    named = set(re.findall(r"[\w.+-]+\.(?:json|jsonl|txt|stderr)", text))
    return sorted(p for p in folder.glob(pattern) if p.name in named)
