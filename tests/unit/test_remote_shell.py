"""Remote shell text is built only from quoted parts, and the OS commands sit behind a platform.

Checked on the source (``ast``) so that a new script builder that pastes a value into shell
text unquoted fails here, not in a lab where an interface name or profile value carries ``;``.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.host.platform import LINUX, PLATFORMS, Platform, platform_named
from pytest_pinet.host.shell import glob_script, write_file_script

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_pinet"
# Calls whose result is shell text made of quoted parts.
SAFE_CALLS = {"quote", "quiet", "section", "sequence", "int", "checked_interface", "plain_glob"}
# A path of the kernel's or a command of Linux's networking tools, as code (not in prose).
OS_WORDS = re.compile(r"""["'](/proc/|/sys/)|\[\s*["'](tc|ethtool|ip|sysctl)["']""")
PLATFORM_DIR = PACKAGE / "host" / "platform"


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "suite" not in p.parts]


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _safe(node: ast.AST, assigned: Mapping[str, ast.AST], seen: frozenset[str] = frozenset()) -> bool:
    """Whether an expression placed into shell text is itself quoted shell text or a number."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Call):
        name = _callee(node)
        return name in SAFE_CALLS or name.endswith("_script")
    if isinstance(node, ast.JoinedStr):
        return all(_safe(v.value, assigned, seen) for v in node.values if isinstance(v, ast.FormattedValue))
    if isinstance(node, ast.BinOp):
        return _safe(node.left, assigned, seen) and _safe(node.right, assigned, seen)
    if isinstance(node, ast.Name):
        if node.id.isupper():
            return True  # a module constant, itself checked where it is defined
        if node.id in assigned and node.id not in seen:
            return _safe(assigned[node.id], assigned, seen | {node.id})
    return False


def _script_builders() -> list[tuple[str, ast.FunctionDef]]:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_script"):
                found.append((f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}", node))
    return found


def test_every_script_builder_pastes_only_quoted_parts():
    builders = _script_builders()
    assert len(builders) >= 12  # facts, snapshot, counters, iperf3 server/client, sysfs writes ...
    offences = []
    for where, function in builders:
        assigned = {
            target.id: node.value
            for node in ast.walk(function)
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        # Values handed to quote() and friends are quoted there; error messages are no shell.
        exempt = {
            id(inner)
            for node in ast.walk(function)
            if (
                isinstance(node, ast.Call)
                and _callee(node) in SAFE_CALLS | {"read_file_script", "read_line_script"}
            )
            or isinstance(node, ast.Raise)
            for inner in ast.walk(node)
        }
        for node in ast.walk(function):
            if isinstance(node, ast.JoinedStr) and id(node) not in exempt and not _safe(node, assigned):
                offences.append(f"{where}: {ast.unparse(node)[:90]}")
    assert not offences, "\n".join(offences)


def test_run_shell_is_only_given_what_a_script_builder_made():
    offences = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _callee(node) == "run_shell" and node.args:
                argument = node.args[0]
                built = (isinstance(argument, ast.Call) and _callee(argument) in {"quote", *SAFE_CALLS}) or (
                    isinstance(argument, ast.Call) and _callee(argument).endswith("_script")
                )
                named = isinstance(argument, (ast.Name, ast.Attribute)) and ast.unparse(argument).endswith(
                    "script"
                )
                if not (built or named):
                    offences.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(argument)[:80]}")
    assert not offences, "\n".join(offences)


def test_linux_paths_and_tools_live_only_in_the_platform():
    """/proc, /sys, tc, ethtool, ip and sysctl belong to host/platform (facts parsers aside)."""
    allowed = {
        PACKAGE / "host" / "facts_parse.py",
        PACKAGE / "virtlab",
    }  # parsers; the lab builder is Linux by nature
    offences = []
    for path in _modules():
        if path.is_relative_to(PLATFORM_DIR) or path in allowed or path.is_relative_to(PACKAGE / "virtlab"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if OS_WORDS.search(code):
                offences.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()[:90]}")
    assert not offences, "\n".join(offences)


HOSTILE = "$(touch pwned); `touch pwned2`; 'x\" && touch pwned3"


def test_hostile_values_reach_the_file_as_text(tmp_path: Path):
    target = tmp_path / "value"
    subprocess.run(["sh", "-c", write_file_script(str(target), HOSTILE)], cwd=tmp_path, check=True)
    assert target.read_text() == HOSTILE + "\n"
    assert not any(tmp_path.glob("pwned*"))


def test_glob_patterns_and_interface_names_are_refused_not_escaped():
    with pytest.raises(ValueError, match="glob"):
        glob_script("/sys/devices/system/cpu", "cpu*; reboot")
    for build in (
        lambda: LINUX.facts_script(["eth0;reboot"]),
        lambda: LINUX.snapshot_script("$(reboot)", ["rx_bytes"]),
        lambda: LINUX.set_mtu("eth0 up", 1500),
        lambda: LINUX.irq_affinity_file("12/../../x"),
    ):
        with pytest.raises(ValueError, match="not an"):
            build()


def test_the_linux_platform_is_complete_and_chosen_by_name():
    assert isinstance(platform_named("linux"), Platform)
    assert set(PLATFORMS) == {"linux", "freebsd", "netbsd", "qnx"}
    with pytest.raises(ConfigError, match=r"unknown os 'plan9'.*linux"):
        platform_named("plan9", "lab.yaml")
    snapshot = subprocess.run(
        ["sh", "-c", LINUX.snapshot_script("lo", ["rx_bytes"])], capture_output=True, text=True
    )
    assert "@@obs:interrupts" in snapshot.stdout and "rx_bytes " in snapshot.stdout


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_one_line_files_are_read_by_builtins_and_an_absent_one_prints_nothing(tmp_path, shell):
    from pytest_pinet.host.shell import read_line_script, when_present_script

    (tmp_path / "count").write_text("4711\n")
    (tmp_path / "bare").write_text("42")  # no newline at the end still reads
    script = "; ".join(
        f"echo [; {read_line_script(str(tmp_path / name))}; echo ]" for name in ("count", "gone", "bare")
    )
    script += f"; {when_present_script(['pinet-no-such-tool', 'x'])} || echo absent"
    done = subprocess.run([shell, "-c", script], capture_output=True, text=True, check=False)
    assert done.stdout.split() == ["[", "4711", "]", "[", "]", "[", "42", "]", "absent"]
    assert done.stderr == ""
