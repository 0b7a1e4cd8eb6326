"""The shape a newcomer can carry on: no function over 80 lines, no module over 500, read from the
source with ``ast`` (ruff checks complexity and blind excepts; the architecture test, imports).

A module past 500 lines has always turned out to hold two jobs here (the lab and the host, the
options and where their values come from); the limit makes the split happen when it is cheap.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pytest_pinet"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500


def long_functions(pkg_dir: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    found = []
    for path in sorted(pkg_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(pkg_dir)}:{node.lineno} {node.name}: {lines} lines")
    return found


def long_modules(pkg_dir: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    return [
        f"{path.relative_to(pkg_dir)}: {count} lines"
        for path in sorted(pkg_dir.rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > limit
    ]


def test_no_function_over_80_lines() -> None:
    found = long_functions(PACKAGE_DIR)
    assert not found, "split these:\n" + "\n".join(found)


def test_no_module_over_500_lines() -> None:
    found = long_modules(PACKAGE_DIR)
    assert not found, "split these by job:\n" + "\n".join(found)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(80))
    (tmp_path / "long.py").write_text(
        f"def fine():\n    pass\n\n\ndef too_long():\n{body}\n", encoding="utf-8"
    )
    assert long_functions(tmp_path) == ["long.py:5 too_long: 81 lines"]
    assert long_modules(tmp_path, limit=80) == ["long.py: 85 lines"]
