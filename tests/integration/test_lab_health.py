"""Health before blame on the namespace lab: a cable that renegotiated at 100 Mbit/s.

``pinet lab degrade --link-speed 100 --link usb`` shapes the board's second cable to
100 Mbit/s and makes both its ends report 100, as a bad cable does.  A short run of the
adapter tests on both links must then end the ``usb`` link's tests as a ``link-negotiation``
lab fault (broken in Allure, with expected and found, after renegotiation and a power-cycle
were tried), measure the ``eth`` link as usual, and keep nothing of the bad link in the
results or the store, so no baseline can learn from it.  The live check refuses an inventory
that names the wrong adapter, expected and found side by side.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_pinet.exit_codes import Exit
from pytest_pinet.virtlab import cable_faults, shaping, virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = """\
version: 1
rules:
  - id: health-runs-any-transfer
    match: {scenario: usb-adapter}
    min_mbps: 50
    why: this test judges the health check, not this shared machine's goodput
"""


@pytest.fixture(scope="module")
def bad_cable_lab(root_required, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabSpec]:
    spec = LabSpec(name="pinet61", state_root=tmp_path_factory.mktemp("health") / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    try:
        changed = cable_faults.degrade_link_speed(spec, 100, "usb")
        assert len(changed) == 2 and all("100 Mbit/s" in line for line in changed)
        # A later `degrade --percent` (here back to calibrated) keeps the bad cable bad.
        cable_faults.degrade(spec, 0.0)
        usb = next(link for link in spec.links if link.name == "usb")
        assert cable_faults.cable_speed(spec, usb) == 100
        rate = f"rate {shaping.Shaping(100, usb.mtu).rate_kbit}Kbit"
        assert rate in shaping.describe(spec.netns("pi"), "eth1"), shaping.describe(spec.netns("pi"), "eth1")
        yield spec
    finally:
        virtual_lab.down(spec)


def pinet(*args: str, spec: LabSpec) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PINET_STATE_DIR": str(spec.state_root)}
    return subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_live_check_refuses_the_wrong_adapter_side_by_side(bad_cable_lab: LabSpec) -> None:
    text = bad_cable_lab.env_file.read_text(encoding="utf-8")
    assert text.count("adapter: builtin") == 1
    # The same lab, but its inventory says the board's eth0 is an RTL8153 USB adapter (beside
    # the original: the keys and known_hosts it names are relative to it).
    wrong = bad_cable_lab.env_file.with_name("wrong-adapter.yaml")
    wrong.write_text(text.replace("adapter: builtin", "adapter: rtl8153"), encoding="utf-8")
    done = pinet("lab", "check", "--live", str(wrong), spec=bad_cable_lab)
    assert done.returncode == Exit.LAB_FAULT, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "eth0 driver" in line)
    assert row.split() == [
        "pi",
        "eth0",
        "driver",
        "r8152",
        "(rtl8153)",
        "veth",
        "FAULT",
        "(adapter-mismatch)",
    ]
    usb_id = next(line for line in done.stdout.splitlines() if "eth0 USB ID" in line)
    assert "0bda:8153" in usb_id and "not reported" in usb_id
    speed = [
        line for line in done.stdout.splitlines() if "speed" in line and "100 Mbit/s (shaped veth)" in line
    ]
    assert len(speed) == 2  # both ends of the degraded cable, each with what it reports
    assert "UNHEALTHY: link eth, link usb" in done.stdout


def test_bad_cable_ends_its_link_as_a_lab_fault_and_the_rest_measures(
    bad_cable_lab: LabSpec, tmp_path: Path
) -> None:
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    results, allure_dir = tmp_path / "results", tmp_path / "allure"
    env = {**os.environ, "PINET_STATE_DIR": str(bad_cable_lab.state_root)}
    base = [sys.executable, "-m", "pytest", "pytest_pinet/suite/test_adapters.py", "-p", "no:cacheprovider"]
    base += ["--pinet-lab", str(bad_cable_lab.env_file)]
    listed = subprocess.run(
        [*base, "--collect-only", "-q"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    chosen = [
        line
        for line in listed.stdout.splitlines()
        if "test_adapter_half_duplex[" in line and "board->peer" in line and "stock" in line
    ]
    assert len(chosen) == 2, listed.stdout[-2000:]  # one per link
    run = [
        *chosen,
        *base[4:],
        *("--pinet-results", str(results), "--pinet-db", f"sqlite:///{results / 'pinet.sqlite'}"),
        *("--pinet-duration", "3", "--pinet-omit", "1", "--pinet-adaptive", "off", "--pinet-remeasure", "0"),
        *("--pinet-thresholds", str(thresholds), "--alluredir", str(allure_dir), "-p", "no:randomly"),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *run], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    out = done.stdout
    # a lab fault never makes a run green, and says it was the lab's: exit 7, not a regression's 1
    assert done.returncode == Exit.LAB_FAULT, out[-3000:]
    assert f"pinet: night status exit {int(Exit.LAB_FAULT)}: every failure (1) was a lab fault" in out, out[
        -3000:
    ]
    (run_dir,) = list(results.glob("2*"))
    measured = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines()]
    assert [m["context"]["link"] for m in measured] == ["eth"], out[-3000:]
    with sqlite3.connect(results / "pinet.sqlite") as db:
        stored = db.execute("select link from measurements").fetchall()
    assert stored == [("eth",)]  # a baseline reads the store: nothing of the bad link is there
    statuses = {
        r["name"]: r["status"] for r in (json.loads(p.read_text()) for p in allure_dir.glob("*-result.json"))
    }
    assert sorted(statuses.values()) == ["broken", "passed"], statuses
    (broken,) = [name for name, status in statuses.items() if status == "broken"]
    assert "usb" in broken
    facts = [json.loads(line) for line in (run_dir / "facts.jsonl").read_text().splitlines()]
    faults = [f for f in facts if f["kind"] == "lab-fault"]
    assert [(f["category"], f["host"], f["recovered"]) for f in faults] == [("link-negotiation", "pi", False)]
    assert "renegotiate" in faults[0]["action"] and "power-cycle: " in faults[0]["action"]
    assert "expected 1000 Mbit/s, found 100 Mbit/s (shaped veth)" in faults[0]["message"]
    assert "lab fault (link-negotiation): link usb failed its health check" in out
    summary = out[out.index("pinet lab health") :].splitlines()
    assert summary[1].startswith("UNHEALTHY link usb: not measured")
    assert any(line.startswith("healthy: ") and "link eth" in line for line in summary)
    environment = (allure_dir / "environment.properties").read_text(encoding="utf-8").splitlines()
    assert environment[0].startswith("unhealthy.link.usb=pi eth1 speed: expected 1000 Mbit/s, found 100")


def test_a_cable_failing_its_check_night_after_night_is_left_out_until_returned(
    bad_cable_lab: LabSpec, tmp_path: Path
) -> None:
    """Out of service (docs/lab-health.md): with ``--pinet-out-of-service-after 2`` the usb
    cable that stays bad fails its check on two nights (lab faults, exit 7); the third night
    leaves its test out, neither red nor green, says since when and why, and measures the
    good cable (exit 0); ``pinet lab return pi`` brings it back, and the next night tries it
    again (a lab fault once more: the cable is still bad)."""
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    results = tmp_path / "results"
    db = f"sqlite:///{results / 'pinet.sqlite'}"
    env = {**os.environ, "PINET_STATE_DIR": str(bad_cable_lab.state_root)}
    chosen = [
        f"pytest_pinet/suite/test_adapters.py::test_adapter_half_duplex[link-{link}-board->peer-stock]"
        for link in ("eth", "usb")
    ]
    night = [
        sys.executable, "-m", "pytest", *chosen, "-p", "no:cacheprovider", "-p", "no:randomly",
        "--pinet-lab", str(bad_cable_lab.env_file), "--pinet-results", str(results), "--pinet-db", db,
        "--pinet-duration", "2", "--pinet-omit", "1", "--pinet-adaptive", "off", "--pinet-remeasure", "0",
        "--pinet-thresholds", str(thresholds), "--pinet-out-of-service-after", "2",
    ]  # fmt: skip

    def run_night() -> tuple[subprocess.CompletedProcess[str], list[str]]:
        done = subprocess.run(night, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        newest = sorted(results.glob("2*"))[-1] / "measurements.jsonl"
        rows = [json.loads(line) for line in newest.read_text().splitlines()] if newest.exists() else []
        return done, [r["context"]["link"] for r in rows]

    for _ in range(2):
        done, links = run_night()
        assert done.returncode == Exit.LAB_FAULT and links == ["eth"], done.stdout[-3000:]
    first_run = sorted(p.name for p in results.glob("2*"))[0]
    left_out, links = run_night()
    assert left_out.returncode == Exit.GREEN and links == ["eth"], left_out.stdout[-3000:]
    line = f"pi link usb out of service since run {first_run}: lab fault (link-negotiation): link usb failed"
    assert f"OUT OF SERVICE {line}" in left_out.stdout, left_out.stdout[-3000:]
    # still checked (its streak goes on), but no cure tried and no lab fault of tonight's
    assert (
        "lab faults:" not in left_out.stdout and "UNHEALTHY link usb: not measured (none)" in left_out.stdout
    )
    assert "(2 failed health checks in a row; back with `pinet lab return pi`)" in left_out.stdout
    assert "1 passed, 1 skipped" in left_out.stdout, left_out.stdout[-1500:]

    back = pinet("lab", "return", "pi", "--why", "cable swapped", "--db", db, spec=bad_cable_lab)
    assert back.returncode == 0, back.stdout + back.stderr
    assert f"pi of {bad_cable_lab.name}: returned to service by " in back.stdout, back.stdout
    assert "pi link usb: had failed 3 night(s) in a row" in back.stdout, back.stdout
    tried_again, links = run_night()
    assert tried_again.returncode == Exit.LAB_FAULT and links == ["eth"], tried_again.stdout[-3000:]
    assert "OUT OF SERVICE" not in tried_again.stdout
