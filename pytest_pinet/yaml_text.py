"""YAML read the way ``yaml.safe_load`` reads it, through libyaml when PyYAML has it.

Why: PyYAML's pure-Python parser takes 30 ms for the shipped thresholds file (26 kB) and
libyaml's 3.3 ms, with the same result.  A measuring test reads its thresholds and latency
rules as it judges, so a main job of 80 tests spent about 5 s parsing the same files, and
each of the test command's 70 pytest sessions a few tenths of a second.  The safe
constructors are the same either way; only the scanner and parser are C.
"""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """What ``yaml.safe_load(text)`` returns; raises ``yaml.YAMLError`` as it does."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader, C or Python
