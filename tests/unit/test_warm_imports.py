"""A measuring session imports its rooms before any SSH thread exists (see
pytest_pinet/session/warm_imports.py: CPython 3.11's AST conversion is not thread-safe, and a
lazy import first reached during fault recovery once failed with a SystemError in CI)."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_pinet.session import warm_imports


def test_every_module_of_each_room_is_imported_and_a_missing_dependency_is_named(tmp_path, monkeypatch):
    root = tmp_path / "fakepinet"
    rooms = ("measure", "lab", "judge")
    for room in rooms:
        (root / room / "inner").mkdir(parents=True)
        (root / room / "__init__.py").write_text("")
        (root / room / "plain.py").write_text("VALUE = 1\n")
        (root / room / "inner" / "__init__.py").write_text("")
        (root / room / "inner" / "deep.py").write_text("VALUE = 2\n")
    (root / "__init__.py").write_text("")
    (root / "measure" / "tcp.py").write_text("from ..lab import plain\nfrom ..judge.inner import deep\n")
    (root / "unreached").mkdir()
    (root / "unreached" / "__init__.py").write_text("")
    (root / "unreached" / "plain.py").write_text("VALUE = 3\n")
    (root / "lab" / "needs_extra.py").write_text("import a_module_nobody_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        skipped = warm_imports.import_run_modules("fakepinet")
        assert skipped == ["fakepinet.lab.needs_extra"]
        for room in rooms:
            assert f"fakepinet.{room}.plain" in sys.modules
            assert f"fakepinet.{room}.inner.deep" in sys.modules
        assert "fakepinet.unreached.plain" not in sys.modules
    finally:
        for name in [m for m in sys.modules if m == "fakepinet" or m.startswith("fakepinet.")]:
            del sys.modules[name]


def test_pinet_own_rooms_import_whole_here():
    assert warm_imports.import_run_modules() == []


def test_the_rooms_are_the_measurers_and_what_they_import():
    rooms = warm_imports.run_rooms(Path(warm_imports.__file__).resolve().parents[1])
    assert {"measure", "lab", "host", "traffic", "judge", "model", "record"} <= set(rooms)
    assert not {"plugin", "cli", "suite", "bench"} & set(rooms)
