"""Whether a pytest run uses pinet at all, decided without loading anything of pinet's core.

pinet acts only on a run that names one of its options (command line or ini) or collects a
test asking for one of its fixtures; any other run beside it in the environment sees nothing
of pinet: no header, no results directory, no settings parsed, no markers registered.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from .markers import register_markers
from .option_sources import any_given
from .run_state import pinet_run

# No pinet fixture is autouse, so a test carries one only by asking for it (directly or through
# another fixture): asking is what makes a test pinet's.
FIXTURE_MODULES = "pytest_pinet.plugin.fixtures."
ENGAGED = pytest.StashKey[bool]()


def options_given(config: pytest.Config) -> bool:
    """True when the command line or the ini file names any pinet option."""
    return any_given(config.getoption, config.getini)


def uses_pinet(items: Sequence[pytest.Item]) -> bool:
    """True when a collected test asks, directly or through other fixtures, for one of ours."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for definitions in info.name2fixturedefs.values():
            if any(str(getattr(d.func, "__module__", "")).startswith(FIXTURE_MODULES) for d in definitions):
                return True
    return False


def engage(config: pytest.Config) -> None:
    """Mark the run as pinet's and make its state (a bad option stops the run here, naming its
    source); the markers are registered too, so ``--strict-markers`` accepts the suites'."""
    config.stash[ENGAGED] = True
    register_markers(config)
    pinet_run(config)


def engaged(config: pytest.Config) -> bool:
    """Whether pinet has engaged in this run (see :func:`engage`)."""
    return config.stash.get(ENGAGED, False)
