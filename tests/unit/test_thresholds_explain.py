"""`pinet thresholds explain` judges as a run does (issue 61): the same file (option,
environment, ini, the rootdir's lab file, shipped), the path's limit for every kind of context
with the part that sets it, a real board's contexts from the inventory, and a non-zero exit
naming the known values for what nothing knows.  And `pinet lab check` says which of the lab's
rules judge which of its boards' contexts."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_pinet.cli.main import main
from pytest_pinet.exit_codes import Exit
from pytest_pinet.judge.threshold_rules import SHIPPED
from pytest_pinet.plugin.option_sources import resolve
from pytest_pinet.session.thresholds_source import thresholds_file
from tests.lab_example import keyed_example

RULE = "extends: shipped\nrules:\n  - {{id: {name}, match: {{scenario: ethernet}}, min_mbps: 1}}\n"
NOTHING: dict[str, Any] = {}
PI3BPLUS_ROUTING = "model=Pi 3B+,scenario=routing,qdisc=sfq,link_speed_mbps=1000,mtu=1500"


def _explain(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["thresholds", "explain", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_pi_3bplus_route_is_limited_by_its_usb2_mac_not_the_cable(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PINET_THRESHOLDS", raising=False)
    code, out, _ = _explain(capsys, "--context", PI3BPLUS_ROUTING)
    assert (
        code == 0 and "assumed (not given): protocol=TCP, streams=10, rate_target_mbps=0, duplex=half" in out
    )
    assert "path limit 300.0 Mbit/s: the Pi 3B+'s GbE port is a LAN7515 behind its USB 2 hub" in out
    assert "routing-download (its floor 930 Mbit/s is above the path's limit)" in out
    code, out, _ = _explain(capsys, "--context", "model=Pi 4B,scenario=routing,direction=upload,duplex=full,"
                            "rate_target_mbps=100,link_speed_mbps=1000,mtu=1500")  # fmt: skip
    assert code == 0 and "floor 95.0 Mbit/s, path limit 100.0 Mbit/s: the sender's rate target" in out


@pytest.mark.parametrize(
    ("context", "said"),
    [
        ("model=Pi 3+,scenario=routing", "model 'Pi 3+' is no known model: use one of ['Pi 3B', 'Pi 3B+'"),
        ("model=pi 3b+,scenario=routing", "model 'pi 3b+' is no known model: did you mean 'Pi 3B+'?"),
        ("model=Pi 9,scenario=ethernet", "use one of ['Pi 3B', 'Pi 3B+'"),
        ("scenario=ethernt", "scenario 'ethernt' is none of ['ethernet', 'usb-adapter'"),
        ("colour=red,scenario=ethernet", "no context has a key 'colour'; the keys are"),
        ("model=Pi 4B", "name the scenario (one of ['ethernet'"),
    ],
)
def test_what_nothing_knows_exits_non_zero_naming_the_known_values(capsys, context, said):
    code, out, err = _explain(capsys, "--context", context)
    assert code == Exit.BAD_CONFIG and said in err and not out


def test_the_file_is_the_one_a_run_would_use_in_the_runs_order(capsys, tmp_path, monkeypatch):
    """Option > PINET_THRESHOLDS > ini > the rootdir's lab file > shipped, each as the
    plugin's own resolution gives it for the same rootdir (relative paths at the rootdir)."""
    monkeypatch.delenv("PINET_THRESHOLDS", raising=False)
    root = tmp_path / "lab-repo"
    (root / "lab").mkdir(parents=True)
    (root / "tests").mkdir()
    for name in ("own", "ini", "env", "option"):
        (root / f"{name}.yaml").write_text(RULE.format(name=name))
    (root / "lab" / "thresholds.yaml").write_text(RULE.format(name="own"))
    start = root / "tests"  # run from a subdirectory: the rootdir is still the ini's
    steps = [
        ({}, {}, root / "lab" / "thresholds.yaml"),
        ({"pinet_thresholds": "ini.yaml"}, {}, root / "ini.yaml"),
        ({"pinet_thresholds": "ini.yaml"}, {"PINET_THRESHOLDS": "env.yaml"}, root / "env.yaml"),
    ]
    for ini, environ, expected in steps:
        body = "".join(f'{k} = "{v}"\n' for k, v in ini.items())
        (root / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{body}")
        found, _ = thresholds_file("", environ, start)
        assert found == expected == resolve(NOTHING.get, ini.get, environ, root).thresholds, (ini, environ)
    # The command line wins over all of them, relative to where it is typed.
    assert (
        thresholds_file("../option.yaml", {"PINET_THRESHOLDS": "env.yaml"}, start)[0]
        == start / "../option.yaml"
    )
    (root / "lab" / "thresholds.yaml").unlink()
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert (
        thresholds_file("", {}, start)[0] == SHIPPED == resolve(NOTHING.get, NOTHING.get, {}, root).thresholds
    )
    monkeypatch.chdir(start)
    monkeypatch.setenv("PINET_THRESHOLDS", str(root / "env.yaml"))
    code, out, _ = _explain(capsys, "--context", "scenario=ethernet,duplex=half")
    assert code == 0 and f"thresholds: {root / 'env.yaml'} (extends; PINET_THRESHOLDS)" in out
    assert "rule env (the lab's file" in out


def test_a_board_is_explained_context_by_context_from_the_inventory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PINET_THRESHOLDS", raising=False)
    env = keyed_example(tmp_path / "lab")
    code, out, _ = _explain(capsys, "--board", "pi4", "--lab", str(env))
    assert code == 0
    assert (
        "ethernet half board->peer over pi4-builtin: limit 941.5 (cable), floor 940.0 by gbe-tcp-half-duplex"
        in out
    )
    assert "throttled to 400: limit 400.0 (rate-target), floor 380.0 by adapter-full-throttled-peer" in out
    assert "storage 8 B blocks half write over usb-ssd" in out and "routing sfq half download over" in out
    code, _, err = _explain(capsys, "--board", "nope", "--lab", str(env))
    assert code == Exit.BAD_CONFIG and "has no board 'nope'; its boards are ['pi4', 'pi5']" in err


def test_lab_check_says_which_of_the_labs_rules_judge_which_contexts(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PINET_THRESHOLDS", raising=False)
    env = keyed_example(tmp_path / "lab")
    (tmp_path / "lab" / "thresholds.yaml").write_text(
        "extends: shipped\nrules:\n"
        "  - {id: ours, match: {scenario: ethernet, duplex: half}, min_mbps: 930}\n"
        "  - {id: pi3-disks, match: {model: 'Pi 3B', scenario: storage}, min_mbps: 1}\n"
        "  - {id: too-high, match: {scenario: usb-adapter, duplex: full}, min_mbps: 990}\n"
    )
    assert main(["lab", "check", str(env)]) == 0
    out = capsys.readouterr().out
    assert "rule ours judges 4 contexts: pi4: ethernet half board->peer over pi4-builtin" in out
    assert "rule pi3-disks: judges none of this lab's boards' contexts" in out
    assert "WARNING: rule too-high's floor is above what the path carries in" in out
