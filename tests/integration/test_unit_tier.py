"""The unit tier is what it says: ``pytest tests/unit`` passes with nothing but the venv.

The test command runs the unit tests here, once (pyproject's ``testpaths`` leaves
``tests/unit`` out of its own collection): as an ordinary user from the sdist, in two
processes, rather than a second time in the test command's own process.

Taken as a contributor takes it: the sdist unpacked (what a distribution or a lab builds and
tests from), a fresh venv holding the wheel and its dependencies, run as an ordinary user
whose PATH has the basic tools of any Linux machine and no C compiler and no iproute2 (no
``cc``, ``ip``, ``ss``, ``tc``). A unit test that needs a compiler, a server or root fails
here by name; such a test belongs to the integration tier. How long the tier takes on one core
is a benchmark figure (docs/performance.md), not this test's business.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_wheel import NOBODY, SITE, _everyone_can_reach, _interpreter

# What any Linux machine has (coreutils, a shell, git): the unit tier may use these and no more.
BASIC_TOOLS = [
    "sh",
    "bash",
    "env",
    "cat",
    "ls",
    "rm",
    "mkdir",
    "cp",
    "mv",
    "ln",
    "sed",
    "grep",
    "find",
    "sort",
    "uniq",
    "uname",
    "id",
    "true",
    "false",
    "sleep",
    "date",
    "head",
    "tail",
    "tr",
    "wc",
    "xargs",
    "dirname",
    "basename",
    "readlink",
    "realpath",
    "chmod",
    "touch",
    "tee",
    "printf",
    "echo",
    "test",
    "stat",
    "mktemp",
    "dd",
    "sync",
    "git",
]
ABSENT = ("cc", "gcc", "clang", "zig", "ip", "ss", "tc", "irtt", "iperf3", "sshd")
# The project's own venv's packages, except the project itself (the wheel brings it).
NOT_DEPENDENCIES = ("pytest_pinet", "__editable__", "distutils-")


@pytest.fixture(scope="module")
def contributor(built, root_required) -> Iterator[dict[str, Path]]:
    """The unpacked sdist, a venv with the wheel and its dependencies, and a PATH of basic
    tools only, all readable (and the sdist writable) by the ordinary user ``nobody``."""
    for needed in (SITE, Path(_interpreter())):
        if not _everyone_can_reach(needed):
            # The tier still runs, as this user from the checkout: the test command runs the
            # unit tests here alone (pyproject's testpaths), so a skip would drop them all.
            yield {"unreachable": needed}
            return
    root = Path(tempfile.mkdtemp(prefix="pinet-unit-tier-"))
    try:
        root.chmod(0o755)
        with tarfile.open(built["sdist"]) as sdist:
            sdist.extractall(root, filter="data")
        (source,) = root.glob("pytest_pinet-*")
        deps = root / "deps"
        deps.mkdir()
        for entry in SITE.iterdir():
            if not entry.name.startswith(NOT_DEPENDENCIES) and entry.suffix != ".pth":
                (deps / entry.name).symlink_to(entry)
        venv = root / "venv"
        subprocess.run([_interpreter(), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        (next((venv / "lib").glob("python3*")) / "site-packages" / "dependencies.pth").write_text(f"{deps}\n")
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")),
                *("install", "-q", "--no-deps"),
                *("--no-index", "--disable-pip-version-check", str(built["wheel"])),
            ],
            check=True,
            timeout=300,
        )
        tools = root / "bin"
        tools.mkdir()
        for name in BASIC_TOOLS:
            found = shutil.which(name)
            if found is not None:
                (tools / name).symlink_to(found)
        (tools / "python").symlink_to(venv / "bin" / "python")
        home = root / "home"
        home.mkdir()
        for path in [source, home, *source.rglob("*"), *home.rglob("*")]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        for path in (venv, *venv.rglob("*")):
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | (0o755 if path.is_dir() else 0o644))
        yield {"source": source, "venv": venv, "tools": tools, "home": home}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_unit_tier_passes_with_nothing_but_the_venv_as_an_ordinary_user(contributor):
    if "unreachable" in contributor:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "tests/unit",
                "-m",
                "unit",
                "-n",
                "2",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=900,
        )
        tail = (done.stdout + done.stderr)[-6000:]
        assert done.returncode == 0, tail
        pytest.xfail(
            f"ran as this user from the checkout: an ordinary user cannot reach {contributor['unreachable']}"
        )
    tools = contributor["tools"]
    present = [name for name in ABSENT if shutil.which(name, path=str(tools))]
    assert not present, f"the tier's PATH must not have {present}"
    env = {"PATH": str(tools), "HOME": str(contributor["home"]), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [
            *(
                shutil.which("setpriv") or "setpriv",
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
            ),
            *(str(contributor["venv"] / "bin" / "python"), "-m", "pytest", "tests/unit"),
            *("-m", "unit", "-n", "2", "-q", "-p", "no:cacheprovider"),
        ],
        cwd=contributor["source"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail and " error" not in tail, tail
