"""Hypothesis, as the unit tests use it: no deadline per example and no health check on how
fast examples are made.  Why: the test command runs the unit tier beside QEMU boards under
emulation, on two cores; an example that took 200 ms there, or inputs made slowly, say
nothing about the rule a property test checks.  Speed targets belong to ``pinet bench``."""

from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the modules that need it fail to import, naming the extra (root conftest)
    pass
else:
    settings.register_profile("pinet-repository", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("pinet-repository")
