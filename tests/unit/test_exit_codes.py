"""One exit-code table (issue 63): the code's, the docs' and the CI recipe's are the same, and
every night's mix of failures ends with the status of the owner who must hear first."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_pinet.errors import ConfigError, LabFault, MissingExtra, MissingToolError, PinetError
from pytest_pinet.exit_codes import MEANING, OWNER, Exit, exit_of, meaning, night_exit
from tests.fixture_paths import RECIPES

REPO = Path(__file__).resolve().parents[2]
RECIPE = (RECIPES / "pinet-ci.sh").read_text(encoding="utf-8")


def _docs_table() -> dict[int, tuple[str, str]]:
    """docs/nightly.md's exit-code table: code -> (meaning, whose)."""
    text = (REPO / "docs" / "nightly.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.*) \|(.*)\|$", section, re.M)
    return {int(code): (what, whose.strip()) for code, what, whose in rows}


def test_the_docs_table_is_the_codes_table():
    table = _docs_table()
    assert sorted(table) == [int(status) for status in Exit]
    for status in Exit:
        what, whose = table[int(status)]
        assert what.startswith(MEANING[status]), (status, what)
        if status in OWNER:
            assert whose == OWNER[status], (status, whose)
        else:
            assert whose not in ("lab", "boards"), (status, whose)


def test_the_recipes_codes_are_the_tables():
    constants = dict(re.findall(r"^EXIT_([A-Z_]+)=(\d+)$", RECIPE, re.M))
    assert constants, "pinet-ci.sh keeps no exit constants"
    assert {name: int(code) for name, code in constants.items()} == {
        name: int(Exit[name]) for name in constants
    }
    # Every code the recipe exits with is one of its constants: no bare numbers, no 1.
    assert not re.findall(r"\bdie [0-9]|\bexit 1\b", RECIPE)
    used = set(re.findall(r"\bdie \$\{EXIT_([A-Z_]+)\}", RECIPE))
    assert used <= set(constants) and {"BAD_CONFIG", "MISSING_PREREQUISITE", "NO_REPORT"} <= used


def test_the_recipe_tells_each_owner_what_the_table_gives_them():
    case = re.search(r"tell_owner\(\) \{\n  case \"\$1\" in\n(.*?)\n  esac", RECIPE, re.S)
    assert case is not None
    by_owner: dict[str, set[str]] = {}
    for arm in case.group(1).split(";;"):
        pattern, _, action = arm.partition(")")
        who = re.search(r"who=(\w+)", action)
        if who and "$EXIT_" in pattern:
            by_owner.setdefault(who.group(1), set()).update(re.findall(r"\$EXIT_([A-Z_]+)", pattern))
    assert by_owner == {
        owner: {status.name for status, whose in OWNER.items() if whose == owner}
        for owner in ("lab", "boards")
    }


def test_a_pinet_command_ends_with_its_errors_status():
    assert exit_of(ConfigError("--context", "bad")) is Exit.BAD_CONFIG
    assert exit_of(MissingToolError("missing iperf3")) is Exit.MISSING_PREREQUISITE
    assert exit_of(MissingExtra("pinet run", "reaching a lab needs labgrid")) is Exit.MISSING_PREREQUISITE
    assert exit_of(LabFault("ssh-dropped", "gone")) is Exit.LAB_FAULT
    assert exit_of(PinetError("could not")) is Exit.INTERRUPTED
    assert meaning(9) == MEANING[Exit.REGRESSION] and "not one of" in meaning(137)


VERDICTS = st.sets(st.sampled_from([Exit.REGRESSION, Exit.BELOW_THRESHOLD]))


@given(VERDICTS, st.integers(0, 3), st.integers(0, 3), st.booleans())
def test_a_failed_night_exits_for_the_owner_who_must_hear_first(verdicts, others, faults, nothing):
    failures = len(verdicts) + others + faults
    status = night_exit(int(Exit.FAILED), verdicts, others, faults, nothing) if failures else None
    if not failures:
        return
    if Exit.REGRESSION in verdicts:
        assert status is Exit.REGRESSION  # a lab fault or a broken test never hides it
    elif verdicts:
        assert status is Exit.BELOW_THRESHOLD
    elif others:
        assert status is None  # pytest's 1: a test failed that is no verdict on a board
    else:
        assert status is Exit.LAB_FAULT  # the lab's alone: never a regression


@given(st.sampled_from([0, 5]), st.booleans())
def test_a_green_night_that_measured_nothing_is_not_green(pytest_status, nothing):
    status = night_exit(pytest_status, set(), 0, 0, nothing)
    assert status is (Exit.NOTHING_MEASURED if nothing else None)


@given(st.sampled_from([2, 3, 4]), VERDICTS, st.integers(0, 3))
def test_an_interrupted_or_misconfigured_night_keeps_pytests_word(pytest_status, verdicts, faults):
    assert night_exit(pytest_status, verdicts, 0, faults, True) is None
