"""``--dist loadgroup`` keeps its groups on pytest 9.2 (pytest_pinet/plugin/xdist_groups.py):
each grouped item's id ends in the suffix xdist's own scheduler splits its group from."""

from __future__ import annotations

from typing import Any, cast

import pytest
from xdist.scheduler.loadgroup import LoadGroupScheduling

from pytest_pinet.plugin.xdist_groups import NodeId, group_suffix, keep_groups

pytestmark = pytest.mark.skipif(NodeId is None, reason="pytest before 9.2: xdist's own suffix works")


class Item:
    """What keep_groups reads of a pytest item: its structured id and its group marks."""

    def __init__(self, nodeid: str, *groups: str) -> None:
        self._id = NodeId.parse(nodeid)
        self.groups = groups

    @property
    def nodeid(self) -> str:
        return str(self._id)

    def iter_markers(self, name: str) -> list[pytest.Mark]:
        return [pytest.mark.xdist_group(group).mark for group in self.groups] if name == "xdist_group" else []


class Config:
    def __init__(self, worker: bool = True, loadgroup: bool = True) -> None:
        if worker:
            self.workerinput: dict[str, Any] = {}
        self.loadgroup = loadgroup

    def getvalue(self, name: str) -> bool:
        assert name == "loadgroup"
        return self.loadgroup


def keep(config: Config, items: list[Item]) -> None:
    keep_groups(cast(pytest.Config, config), cast(list[pytest.Item], items))


def scope(nodeid: str) -> str:
    """The work unit xdist's loadgroup scheduler puts ``nodeid`` in."""
    return str(LoadGroupScheduling._split_scope(cast(Any, None), nodeid))


def test_a_grouped_item_reaches_the_scheduler_in_its_group() -> None:
    items = [Item("tests/a.py::test_x[board-pi]", "pinet-pi"), Item("tests/b.py::test_y", "b", "a")]
    keep(Config(), items)
    assert [item.nodeid for item in items] == [
        "tests/a.py::test_x[board-pi]@pinet-pi",
        "tests/b.py::test_y@a_b",
    ]
    assert [scope(item.nodeid) for item in items] == ["pinet-pi", "a_b"]
    keep(Config(), items)  # already suffixed: left as it is
    assert items[0].nodeid == "tests/a.py::test_x[board-pi]@pinet-pi"


def test_ungrouped_items_a_controller_and_other_modes_are_left_alone() -> None:
    plain = Item("tests/a.py::test_x")
    keep(Config(), [plain])
    assert plain.nodeid == "tests/a.py::test_x" and scope(plain.nodeid) == "tests/a.py::test_x"
    for config in (Config(worker=False), Config(loadgroup=False)):
        grouped = Item("tests/a.py::test_x", "g")
        keep(config, [grouped])
        assert grouped.nodeid == "tests/a.py::test_x" and group_suffix(cast(pytest.Item, grouped)) == "@g"
