"""The test command's two workers (tests/worker_schedule.py) run different modules of
tests/integration at once; a lab name is machine-wide (its namespaces, links and addresses),
so no two groups may name one lab: each module names its own, and the modules that use the
shared ``fresh_lab`` / ``lab_users`` form one group.  Read from the source."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from tests.worker_schedule import SHARED_NAME_FIXTURES, SHARED_NAME_GROUP

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
LAB_NAME = re.compile(r"\bpinet\d+\b")


def labs_named_by_two_groups(directory: Path) -> dict[str, list[str]]:
    """Each lab name that more than one worker group names, with those groups."""
    groups: dict[str, set[str]] = defaultdict(set)
    for module in sorted(directory.glob("*.py")):
        text = module.read_text(encoding="utf-8")
        shares = module.name == "conftest.py" or any(
            re.search(rf"\b{fixture}\b", text) for fixture in SHARED_NAME_FIXTURES
        )
        for lab in set(LAB_NAME.findall(text)):
            groups[lab].add(SHARED_NAME_GROUP if shares else module.name)
    return {lab: sorted(named) for lab, named in groups.items() if len(named) > 1}


def test_no_lab_name_is_named_by_two_worker_groups() -> None:
    clashes = labs_named_by_two_groups(INTEGRATION)
    assert not clashes, f"give each module a lab name of its own: {clashes}"


def test_the_check_finds_a_clash(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('LAB = "pinet9"\n', encoding="utf-8")
    (tmp_path / "test_a.py").write_text('spec = LabSpec(name="pinet7")\n', encoding="utf-8")
    (tmp_path / "test_b.py").write_text('spec = qemu_lab("pinet7")  # and pinet70\n', encoding="utf-8")
    (tmp_path / "test_c.py").write_text("def test(fresh_lab):\n    assert fresh_lab.name == 'pinet9'\n")
    assert labs_named_by_two_groups(tmp_path) == {"pinet7": ["test_a.py", "test_b.py"]}
