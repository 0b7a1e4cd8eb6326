"""The fingerprint of a context's path on given nights, as a method of
:class:`..store.ResultsStore`: read from the facts each stored measurement carries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..model.fingerprint import fingerprint
from .store_revisions import in_chunks


class Fingerprints:
    """What a store answers about fingerprints; the store supplies its transactions."""

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        raise NotImplementedError

    def fingerprints(self, context_key: str, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """Each of ``run_ids``' fingerprint of ``context_key``'s path (model.fingerprint), from
        the run's last measurement of it; a run with none, or whose row has no facts, is absent."""
        found: dict[str, dict[str, str]] = {}
        with self._tx() as cur:
            for chunk, marks in in_chunks(list(dict.fromkeys(run_ids))):
                cur.execute(
                    self._sql(
                        "SELECT run_id, data FROM measurements "  # noqa: S608 - marks are placeholders
                        f"WHERE context_key = ? AND run_id IN ({marks}) ORDER BY started, id"
                    ),
                    (context_key, *chunk),
                )
                for run_id, data in cur.fetchall():
                    try:
                        facts = json.loads(data).get("facts") or {}
                    except (ValueError, AttributeError):
                        continue  # a row whose data is not an object: nothing to read
                    hosts = (
                        {k: v for k, v in facts.items() if isinstance(v, dict)}
                        if isinstance(facts, dict)
                        else {}
                    )
                    flat = fingerprint(hosts)
                    if flat:
                        found[str(run_id)] = flat  # a later attempt's replaces an earlier one
        return found
