"""pytest-pinet: hardware-in-the-loop network regression testing for boards and their peers.

Only the package ``plugin`` (the pytest layer: hooks, options, fixtures) and the shipped test
suites know pytest; the core rooms (``lab``, ``host``, ``traffic``, ``judge``, ``record``,
``virtlab``, ``schema``, the shared ``model`` and ``measure`` on top), ``session`` and the
commands (``cli``, ``bench``) never import it. ``tests/unit/test_architecture.py`` reads each
module's layer from its package and holds them to it.

The public API below is what a lab's own tests and tools build on: the measurement model, the
verdict and the measurers.  Names load on first use, so ``import pytest_pinet`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_PUBLIC = {
    "Measurement": "pytest_pinet.model",
    "TrafficContext": "pytest_pinet.model",
    "TcpDetail": "pytest_pinet.model",
    "UdpDetail": "pytest_pinet.model",
    "DiskDetail": "pytest_pinet.model",
    "HostFacts": "pytest_pinet.model",
    "Observation": "pytest_pinet.model",
    "Verdict": "pytest_pinet.judge.verdict",
    "VerdictKind": "pytest_pinet.judge.verdict",
    "JudgePolicy": "pytest_pinet.judge.verdict",
    "judge_measurement": "pytest_pinet.judge.verdict",
    "Thresholds": "pytest_pinet.judge.threshold_rules",
    "load_thresholds": "pytest_pinet.judge.threshold_rules",
    "tcp_goodput_limit": "pytest_pinet.judge.linerate",
    "udp_goodput_limit": "pytest_pinet.judge.linerate",
    "jain_fairness": "pytest_pinet.judge.fairness",
    "Recorder": "pytest_pinet.measure",
    "TcpMeasurer": "pytest_pinet.measure",
    "RoutingMeasurer": "pytest_pinet.measure",
    "UdpMeasurer": "pytest_pinet.measure",
    "StorageMeasurer": "pytest_pinet.measure",
    "ConfigError": "pytest_pinet.errors",
    "LabFault": "pytest_pinet.errors",
    "PinetError": "pytest_pinet.errors",
    "Unsupported": "pytest_pinet.errors",
}
__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'pytest_pinet' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
