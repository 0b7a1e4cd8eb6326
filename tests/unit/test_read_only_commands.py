"""What a newcomer meets first: commands that only read the history create nothing where
there is none (``pinet runs`` on a fresh machine says there is no store and leaves no empty
data directory a later run would take for one), and a test module that needs the test extra
names the extra to install instead of a bare ModuleNotFoundError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_pinet.cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv", [["runs"], ["runs", "--json"], ["trends"], ["compare", "a", "b"]])
def test_reading_a_history_that_does_not_exist_creates_nothing(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PINET_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(argv) != 0
    said = capsys.readouterr()
    assert "no results store at sqlite:///" in said.out + said.err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


def test_a_test_module_missing_the_test_extra_names_the_extra(tmp_path):
    # hypothesis as a user without the test extra has it: not there
    (tmp_path / "hypothesis.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'hypothesis'\", name='hypothesis')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:hypothesispytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/unit/test_linerate.py",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
    assert (
        "tests/unit/test_linerate.py needs hypothesis, from the test extra: "
        "pip install -e '.[test]' (in a clone) or pip install 'pytest-pinet[test]'"
    ) in done.stdout, done.stdout
    assert "Traceback" not in done.stdout
