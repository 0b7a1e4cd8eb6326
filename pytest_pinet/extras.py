"""The ``lab`` extra: what reaching a lab needs, checked before anything reaches for it.

labgrid and allure-pytest are an extra rather than dependencies because each brings a pytest
plugin that loads in every pytest start of the environment, pinet's tests or not (labgrid's
costs about 300 ms).  A run or command that needs a lab without them stops with one line
naming the extra, rather than an ImportError deep in a fixture.
"""

from __future__ import annotations

from importlib.util import find_spec

from .errors import MissingExtra

# The fix names the lab's own wheel, never a bare project name: pytest-pinet is on no public
# index, and a name there is anyone's to publish (docs/nightly.md, "Getting the package").
LAB_EXTRA = (
    "install pytest-pinet[lab] from the lab's own wheel or index: "
    "pip install '/srv/wheels/pytest_pinet-VERSION-py3-none-any.whl[lab]' "
    "(in a clone: pip install -e '.[lab]')"
)
LAB_MODULES = {"labgrid": "labgrid", "allure_pytest": "allure-pytest"}


def missing_lab_packages() -> list[str]:
    """The distributions of the ``lab`` extra this environment lacks (found without importing
    them: a lookup costs microseconds, an import of labgrid a third of a second)."""
    return [dist for module, dist in LAB_MODULES.items() if find_spec(module) is None]


def require_lab_extra(source: str) -> None:
    """Stop with one line when ``source`` (the option, command or test that needs a lab) runs
    where the ``lab`` extra is not installed."""
    missing = missing_lab_packages()
    if missing:
        raise MissingExtra(
            source, f"reaching a lab needs {' and '.join(missing)}, not installed here", LAB_EXTRA
        )
