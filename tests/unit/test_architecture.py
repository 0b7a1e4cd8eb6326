"""Import rules between the package's rooms, checked on the source with ``ast`` and never by importing it.

Rules hold for indirect imports too: a room that imports a neutral module which imports a forbidden one
depends on the forbidden one all the same. Every ``import`` statement counts, wherever it stands: one inside
a function still runs when called, and one under ``if TYPE_CHECKING:`` still ties the rooms together (the
types name the other room's concepts, and one edit away it becomes a runtime import), so neither is exempt.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "pytest_pinet"
PYTEST_WORLD = frozenset({"pytest", "_pytest", "pluggy", "xdist"})
# The layer of every package of pytest_pinet; a module's layer is that of the longest listed package
# holding it, so a module moved between packages changes layer with its package, and a package not
# listed here fails test_every_package_has_a_layer by name.  Modules directly under pytest_pinet are
# the basics (errors, redaction, extras) every layer may use: found on disk, never listed.
PYTEST, TOOLS, CORE = "pytest layer", "tools", "core"
LAYERS = {
    "plugin": PYTEST,  # the plugin: hooks, options, fixtures
    "suite": PYTEST,  # the shipped test suites
    "bench.suite": PYTEST,  # the bench's own test files
    "cli": TOOLS,
    "bench": TOOLS,
    "session": TOOLS,  # one run's state, carried by the plugin and the commands alike
    "schema": CORE,
    "lab": CORE,
    "host": CORE,
    "traffic": CORE,
    "judge": CORE,
    "record": CORE,
    "virtlab": CORE,
    "model": CORE,
    "measure": CORE,
    "host_programs": CORE,  # the source of programs built on a host, and where it is
}
Graph = dict[str, set[str]]  # module -> the package's modules it imports, plus external top-level names


def module_files(pkg_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package (named after its directory)."""
    found: dict[str, Path] = {}
    for path in sorted(pkg_dir.rglob("*.py")):
        parts = [pkg_dir.name, *path.relative_to(pkg_dir).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(pkg_dir: Path) -> Graph:
    """Direct imports of each module; importing ``a.b.c`` also runs ``a`` and ``a.b``, so those count too."""
    files = module_files(pkg_dir)

    def targets(dotted: str) -> set[str]:
        parts = dotted.split(".")
        if parts[0] != pkg_dir.name:
            return {parts[0]}
        # A trailing name that is no module (a class, a function) stops at the module that holds it.
        return {p for p in (".".join(parts[:n]) for n in range(1, len(parts) + 1)) if p in files}

    graph: Graph = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    edges |= targets(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: level 1 is the module's own package, each more level one up
                    anchor = package.split(".")[: package.count(".") + 2 - node.level]
                    base = ".".join([*anchor, *([base] if base else [])])
                edges |= targets(base)
                for alias in node.names:  # ``from pkg import submodule`` depends on the submodule itself
                    if f"{base}.{alias.name}" in files:
                        edges |= targets(f"{base}.{alias.name}")
        edges.discard(module)
    return graph


def top(module: str) -> str:
    """The first component under the package: a room, or a top-level unit such as ``settings``."""
    return module.split(".")[1] if "." in module else ""


def _specific_first(module: str) -> tuple[int, str]:
    """Visit ``a.b.c`` before its parent ``a.b``, so chains and examples name the module really imported."""
    return -module.count("."), module


def _bfs(graph: Graph, starts: Iterable[str], barrier: Set[str] = frozenset()) -> dict[str, str | None]:
    """Shortest-path predecessors from ``starts``; nodes in ``barrier`` are reached but not passed."""
    came_from: dict[str, str | None] = dict.fromkeys(starts)
    queue = deque(came_from)
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph.get(node, ()), key=_specific_first):
            if nxt not in came_from:
                came_from[nxt] = node
                if nxt not in barrier:
                    queue.append(nxt)
    return came_from


def _chain(came_from: dict[str, str | None], end: str) -> list[str]:
    chain = [end]
    while (prev := came_from[chain[-1]]) is not None:
        chain.append(prev)
    return chain[::-1]


@dataclass(frozen=True)
class Rule:
    """Modules for which ``applies(module)`` holds must not reach any node for which
    ``forbidden(pkg_name, node)`` holds."""

    applies: Callable[[str], bool]
    forbidden: Callable[[str, str], bool]
    why: str


def _in_rooms(*rooms: str) -> Callable[[str, str], bool]:
    return lambda pkg, n: n.startswith(pkg + ".") and top(n) in rooms


def layer_of(module: str) -> str | None:
    """The layer of a dotted module: its longest listed package's; None for a basic or the package."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    return None


def _pytest_or_plugin(pkg: str, n: str) -> bool:
    """pytest itself, or the plugin package.  A suite's package may be reached (its ``__init__``
    names where the suite lies) as long as that reaches no pytest: the search goes through it."""
    return n in PYTEST_WORLD or (n.startswith(pkg + ".") and top(n) == "plugin")


def _outside_layer(layer: str) -> Callable[[str], bool]:
    return lambda module: layer_of(module) not in (None, layer)


def _in(*rooms: str) -> Callable[[str], bool]:
    return lambda module: top(module) in rooms


def _basic(pkg: str, n: str) -> bool:
    """A module directly under the package (errors, redaction, extras): usable by every layer."""
    return n.count(".") == 1 and not (PACKAGE_DIR.parent / n.replace(".", "/")).is_dir()


RULES = (
    Rule(_outside_layer(PYTEST), _pytest_or_plugin, "only the pytest layer may reach pytest or the plugin"),
    Rule(_in("judge"), _in_rooms("lab", "host"), "judge must not reach lab or host"),
    Rule(
        _in("host"),
        _in_rooms("lab", "virtlab", "measure", "record"),
        "host must not reach lab, virtlab, measure or record",
    ),
    Rule(_in("traffic"), _in_rooms("record"), "traffic must not reach record"),
    Rule(_in("lab", "host"), _in_rooms("traffic"), "lab and host must not reach traffic"),
    Rule(
        _in("model"),
        lambda pkg, n: n.startswith(pkg + ".") and top(n) != "model" and not _basic(pkg, n),
        "model must reach no other room, only the basics (the modules directly under the package)",
    ),
)


def rule_violations(pkg_dir: Path, rules: tuple[Rule, ...] = RULES) -> list[str]:
    """One shortest chain per forbidden module reached. The search does not pass forbidden modules, and a
    package reached along with its submodule is not reported again, so one bad import is one line."""
    graph, pkg, files = import_graph(pkg_dir), pkg_dir.name, module_files(pkg_dir)
    nodes = set(graph).union(*graph.values())
    found: list[str] = []
    for rule in rules:
        bad = {n for n in nodes if rule.forbidden(pkg, n)}
        came_from = _bfs(graph, sorted(m for m in graph if rule.applies(m)), bad)
        reported: set[tuple[str | None, str]] = set()
        for node, prev in came_from.items():
            if node in bad and (prev, top(node) or node) not in reported:
                reported.add((prev, top(node) or node))
                first, *rest = _chain(came_from, node)
                where = files[first].relative_to(pkg_dir).as_posix()
                found.append(f"{' -> '.join([where, *rest])}: {rule.why}")
    return found


def room_cycles(pkg_dir: Path) -> list[str]:
    """Cycles among rooms and the other top-level units (``settings`` is one), from direct imports.

    A cycle through a top-level module still ties together the rooms on it, so such modules take part;
    components without any room are left alone. Each step of the reported cycle names one import making it.
    """
    graph, files = import_graph(pkg_dir), module_files(pkg_dir)
    example: dict[tuple[str, str], str] = {}
    for module in sorted(graph):
        for target in sorted(graph[module], key=_specific_first):
            if top(target) and top(module) and top(target) != top(module):
                where = files[module].relative_to(pkg_dir).as_posix()
                example.setdefault((top(module), top(target)), f"{where} imports {target}")
    units: Graph = {}
    for a, b in example:
        units.setdefault(a, set()).add(b)
    reach = {unit: set(_bfs(units, [unit])) for unit in units}
    components = {frozenset(m for m in reach[u] if u in reach.get(m, ())) for u in units}
    reports: list[str] = []
    core = {room for room, layer in LAYERS.items() if layer == CORE}
    for scc in sorted((c for c in components if len(c) > 1 and c & core), key=sorted):
        start = min(scc)
        came_from = _bfs({u: units[u] & scc for u in scc}, sorted(units[start] & scc), {start})
        cycle = [start, *_chain(came_from, start)]
        steps = "; ".join(example[step] for step in itertools.pairwise(cycle))
        reports.append(f"cycle {' -> '.join(cycle)} (component {sorted(scc)}): {steps}")
    return reports


def function_level_imports(path: Path) -> set[int]:
    """Line numbers of the imports that stand inside a function (they run late, when called)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines: set[int] = set()
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            lines |= {n.lineno for n in ast.walk(func) if isinstance(n, ast.Import | ast.ImportFrom)}
    return lines


def module_cycles(pkg_dir: Path) -> list[str]:
    """Cycles between modules, every import counted (inside a function and under TYPE_CHECKING too).

    An import inside a function still runs, only later: one placed there to break a cycle hides the
    cycle without removing it, so it is reported here like any other (marked "inside a function").
    A submodule's import of its own package is no edge: Python has run the package by then.
    """
    graph, files = import_graph(pkg_dir), module_files(pkg_dir)
    edges = {m: {t for t in ts if t in graph and not m.startswith(t + ".")} for m, ts in graph.items()}
    reach = {m: set(_bfs(edges, sorted(edges[m]))) for m in edges}
    components = {
        frozenset(n for n in reach[m] | {m} if m in reach.get(n, ())) | {m} for m in edges if m in reach[m]
    }
    reports: list[str] = []
    for scc in sorted((c for c in components if len(c) > 1), key=sorted):
        start = min(scc)
        came_from = _bfs({m: edges[m] & scc for m in scc}, sorted(edges[start] & scc), {start})
        cycle = [start, *_chain(came_from, start)]
        steps = []
        for a, b in itertools.pairwise(cycle):
            late = _imports_late(files[a], b, pkg_dir.name)
            steps.append(
                f"{files[a].relative_to(pkg_dir).as_posix()} imports {b}{' (inside a function)' if late else ''}"
            )
        reports.append(f"module cycle {' -> '.join(cycle)}: {'; '.join(steps)}")
    return reports


def _imports_late(path: Path, target: str, pkg: str) -> bool:
    """Whether every import of ``target`` in ``path`` stands inside a function."""
    late = function_level_imports(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom) and target.rpartition(".")[2] in ast.unparse(n)
    ]
    return bool(found) and all(line in late for line in found)


def test_rooms_respect_import_rules() -> None:
    assert PACKAGE_DIR.is_dir(), PACKAGE_DIR
    violations = rule_violations(PACKAGE_DIR)
    assert not violations, "\n".join(violations)


def test_every_package_has_a_layer() -> None:
    """A package added or renamed without a layer would escape every rule: it fails here, by name."""
    packages = {
        ".".join(path.parent.relative_to(PACKAGE_DIR).parts)
        for path in PACKAGE_DIR.rglob("*.py")
        if path.parent != PACKAGE_DIR
    }
    unlisted = sorted(p for p in packages if layer_of(f"{PACKAGE_DIR.name}.{p}") is None)
    assert not unlisted, f"packages without a layer in LAYERS: {unlisted}"
    stale = sorted(p for p in LAYERS if p not in packages)
    assert not stale, f"LAYERS names packages that do not exist: {stale}"


def test_rooms_form_no_import_cycle() -> None:
    cycles = room_cycles(PACKAGE_DIR)
    assert not cycles, "\n".join(cycles)


def test_modules_form_no_import_cycle() -> None:
    cycles = module_cycles(PACKAGE_DIR)
    assert not cycles, "\n".join(cycles)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "fakepkg"


def test_checker_finds_an_indirect_lazy_type_only_forbidden_import(tmp_path: Path) -> None:
    """The checker is only worth trusting if it fails where it should: here through a neutral module,
    a lazy import inside a function and a TYPE_CHECKING import, all at once."""
    pkg = _write(
        tmp_path,
        {
            "fakepkg/__init__.py": "",
            "fakepkg/lab/__init__.py": "",
            "fakepkg/lab/a.py": "def f():\n    from .. import other\n",
            "fakepkg/other.py": "import typing\nif typing.TYPE_CHECKING:\n    from .traffic import b\n",
            "fakepkg/traffic/__init__.py": "",
            "fakepkg/traffic/b.py": "import pytest\n",
        },
    )
    assert rule_violations(pkg) == [
        "traffic/b.py -> pytest: only the pytest layer may reach pytest or the plugin",
        "lab/a.py -> fakepkg.other -> fakepkg.traffic.b: lab and host must not reach traffic",
    ]


def test_checker_finds_a_room_cycle(tmp_path: Path) -> None:
    pkg = _write(
        tmp_path,
        {
            "fakepkg/lab/a.py": "from fakepkg.judge import c\n",
            "fakepkg/judge/c.py": "import fakepkg.record.d\n",
            "fakepkg/record/d.py": "from ..lab.a import x\n",
        },
    )
    assert room_cycles(pkg) == [
        "cycle judge -> record -> lab -> judge (component ['judge', 'lab', 'record']): judge/c.py imports "
        "fakepkg.record.d; record/d.py imports fakepkg.lab.a; lab/a.py imports fakepkg.judge.c"
    ]


def test_checker_finds_a_module_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    """Two modules of one room import each other, one of them late (inside a function): Python lets it
    load, the cycle is still there, and the checker must say so and name the late import."""
    pkg = _write(
        tmp_path,
        {
            "fakepkg/__init__.py": "",
            "fakepkg/lab/__init__.py": "",
            "fakepkg/lab/inventory.py": "from .platform import linux\n",
            "fakepkg/lab/platform/__init__.py": "",
            "fakepkg/lab/platform/linux.py": "def facts():\n    from ..inventory import NAME\n",
            "fakepkg/lab/alone.py": "from . import inventory\n",
        },
    )
    assert room_cycles(pkg) == []
    assert module_cycles(pkg) == [
        "module cycle fakepkg.lab.inventory -> fakepkg.lab.platform.linux -> fakepkg.lab.inventory: "
        "lab/inventory.py imports fakepkg.lab.platform.linux; "
        "lab/platform/linux.py imports fakepkg.lab.inventory (inside a function)"
    ]
