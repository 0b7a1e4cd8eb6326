"""Without the ``lab`` extra, a lab run or command stops with one line naming the extra."""

from __future__ import annotations

import importlib.util

import pytest

from pytest_pinet import extras
from pytest_pinet.cli.main import main
from pytest_pinet.errors import ConfigError
from pytest_pinet.exit_codes import Exit


@pytest.fixture
def without_labgrid(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        "pytest_pinet.extras.find_spec", lambda name: None if name == "labgrid" else real(name)
    )


def test_the_extra_is_found_here():
    assert extras.missing_lab_packages() == []


def test_a_missing_labgrid_is_named_with_the_extra_that_brings_it(without_labgrid):
    with pytest.raises(ConfigError) as raised:
        extras.require_lab_extra("LG_ENV")
    assert str(raised.value).startswith("LG_ENV: reaching a lab needs labgrid, not installed here")
    assert "pytest-pinet[lab]" in str(raised.value)


@pytest.mark.parametrize("argv", [["run"], ["lab", "check"], ["bisect", "--images", "a,b"]])
def test_lab_commands_stop_with_one_line_and_a_missing_prerequisites_status(without_labgrid, argv, capsys):
    assert main(argv) == Exit.MISSING_PREREQUISITE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reaching a lab needs labgrid" in err[0] and err[0].startswith("pinet: pinet ")


def test_commands_on_the_store_do_not_need_the_extra(without_labgrid, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    main(["runs"])
    assert "reaching a lab" not in capsys.readouterr().err
