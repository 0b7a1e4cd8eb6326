"""What ``pinet lab check`` says of the lab's own threshold rules: which of its boards'
contexts each one would judge, where its floor is above what the path carries (red by
construction), and which judge nothing of this lab, so a rule written for the wrong key or
model is seen at the check, not after a month of nights."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...judge.threshold_rules import LAB_LAYER, Thresholds, judged, load_thresholds
from ...lab.board_contexts import board_contexts, describe
from ...lab.inventory import Inventory
from ...session.thresholds_source import thresholds_file


def rule_coverage(inventory: Inventory, start: Path | None = None) -> Iterator[str]:
    """Lines on the lab's own rules (none when the run would use the shipped rules alone)."""
    path, source = thresholds_file("", os.environ, start or Path.cwd())
    thresholds = load_thresholds(path)
    own = [rule for rule in thresholds.rules if rule.layer == LAB_LAYER]
    if not own:
        yield f"  thresholds: {path} ({source}): the shipped rules judge every context"
        return
    yield f"  thresholds: {path} ({thresholds.mode}; {source})"
    contexts = [(board.name, c) for board in inventory.boards for c in board_contexts(inventory, board.name)]
    for rule in own:
        yield from _one_rule(thresholds, rule.rule_id, contexts)


def _one_rule(
    thresholds: Thresholds, rule_id: str, contexts: list[tuple[str, dict[str, Any]]]
) -> Iterator[str]:
    judges, aside = [], []
    rule = next(r for r in thresholds.rules if r.rule_id == rule_id)
    for board, context in contexts:
        found = judged(thresholds, context)
        if found.rule is not None and found.rule.rule_id == rule_id:
            judges.append(f"{board}: {describe(context)}")
            if rule.above(found.path.mbps):
                aside.append(f"{board}: {describe(context)} (limit {found.path.mbps:.1f})")
    if not judges and not aside:
        yield f"  rule {rule_id}: judges none of this lab's boards' contexts"
    if judges:
        yield (
            f"  rule {rule_id} judges {len(judges)} contexts: "
            + "; ".join(judges[:6])
            + (f"; and {len(judges) - 6} more" if len(judges) > 6 else "")
        )
    if aside:
        yield (
            f"  WARNING: rule {rule_id}'s floor is above what the path carries in {len(aside)} "
            "contexts (red by construction): " + "; ".join(aside[:4])
        )
