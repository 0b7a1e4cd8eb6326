"""``--dist loadgroup`` keeping its groups on pytest 9.2.

pytest-xdist tells its controller a test's ``xdist_group`` by appending ``@group`` to the
test's id on the worker (``item._nodeid``).  pytest 9.2 keeps a node's id as a structured
``NodeId`` (``item._id``), so that assignment changes nothing: every test is scheduled on
its own, silently (pytest-xdist issue 1386, open).  pinet relies on the groups: one worker
measures one board, and a board's tests must not be spread over workers that would each
drive it.  This puts the suffix where pytest 9.2 reads the id, for the items it is given,
exactly as xdist does on an older pytest; with an xdist that does it itself (or an older
pytest) the ids already end in their group and nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from .engagement import uses_pinet

try:  # pytest >= 9.2: ids are structured
    from _pytest.nodeid import NodeId
except ImportError:  # pragma: no cover - older pytest, where xdist's own suffix works
    NodeId = None  # type: ignore[assignment,misc]

__all__ = ["GroupKeeper", "NodeId", "group_suffix", "keep_groups"]


def group_suffix(item: pytest.Item) -> str:
    """``@a_b`` for an item in groups a and b (xdist's own spelling), "" for none."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "@" + "_".join(sorted(names)) if names else ""


def keep_groups(config: pytest.Config, items: Iterable[pytest.Item]) -> None:
    """On an xdist worker of a ``--dist loadgroup`` run, give each of ``items`` its group
    suffix if xdist's could not (call after xdist's own hook: ``trylast``)."""
    if NodeId is None or getattr(config, "workerinput", None) is None or not config.getvalue("loadgroup"):
        return
    for item in items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix) and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(item.nodeid + suffix)


class GroupKeeper:
    """pinet's board groups (``collection.py``) kept on the worker, for its own tests only."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep_groups(config, [item for item in items if uses_pinet([item])])
