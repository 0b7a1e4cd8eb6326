"""The QEMU board end to end: image, lab, labgrid boot and power-cycle, the suite on it.

The first run on a machine builds the board image (about 1.5 minutes from the package
sources, then cached); each boot under software emulation takes about 40 s.  The suite
part runs the cases CI must cover: the board's own tests (console, USB, power-cycle), a
half-duplex measurement and the SFQ routing case, whose kernel qdisc this machine lacks.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_pinet.polling import wait_until
from pytest_pinet.record.allure_report import build_report
from pytest_pinet.virtlab import qemu_board, virtual_lab
from pytest_pinet.virtlab.topology import qemu_lab

from ..report_browser import chromium, serve, shoot, tree_paths

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def qemu_spec(root_required, tmp_path_factory):
    for tool in ("mmdebstrap", "qemu-system-x86_64"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    spec = qemu_lab("pinet81", state_root=tmp_path_factory.mktemp("qemu") / "state")
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    yield spec
    virtual_lab.down(spec)


def _suite(
    spec, results: Path, *selection: str, images: str = ""
) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    junit = results / "junit.xml"
    env = {**os.environ, "PINET_STATE_DIR": str(spec.state_root)}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *selection,
        "--pinet-board",
        "qemu",
        "--pinet-virtual-lab",
        spec.name,
        "--pinet-results",
        str(results),
        "--pinet-duration",
        "5",
        # Fixed 5 s runs, as this test was made: what it checks is the board's plumbing (two
        # OS releases flashed, verified, measured; SFQ's evidence), not a verdict's precision.
        # Adaptive runs of at most 5 s on the emulated board once ended the SFQ case
        # undecided (interval 8.5-9.4 around its 8.9 floor); the main job's 10 s runs judge it.
        "--pinet-adaptive",
        "off",
        # ... and for the same reason the SFQ case's floor is half the cable, not 95 %: fixed
        # 5 s runs on a busy host measured 8.5 Mbit/s against that 8.9 floor.  A path that
        # carried nothing, or SFQ that starved streams (Jain), still fails it.
        "--pinet-thresholds",
        str(_plumbing_thresholds(results)),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--junitxml={junit}",
        "-q",
        *([f"--pinet-image={images}", "--alluredir", str(results / "allure")] if images else []),
    ]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    return done, ET.parse(junit).getroot()


def _plumbing_thresholds(results: Path) -> Path:
    """The shipped rules, with the SFQ routing floor of the emulated board at half its cable."""
    rule = {
        "id": "qpi-routing-download-sfq",  # overrides the shipped rule of that id
        "match": {
            "board": "qpi",
            "scenario": "routing",
            "direction": "download",
            "duplex": "half",
            "qdisc": "sfq",
            "link_speed_mbps": 10,
            "mtu": 1500,
        },
        "min_fraction_of_limit": 0.5,
        "min_jain": 0.95,
        "why": "test_qemu_lab checks the plumbing in fixed 5 s runs on a shared host",
    }
    path = results.parent / "thresholds-plumbing.yaml"
    path.write_text(json.dumps({"extends": "shipped", "rules": [rule]}), encoding="utf-8")
    return path


K61, K13 = "image-debian12-k6.1", "image-debian13"
HALF = "pytest_pinet/suite/test_ethernet.py::test_tcp_half_duplex_goodput"


def test_suite_runs_on_the_qemu_board(qemu_spec, tmp_path):
    """The board's own tests and the SFQ case on Debian 12, then the half-duplex case on
    Debian 12 and on Debian 13: two OS releases flashed, verified and measured in one run."""
    results = tmp_path / "results"
    done, junit = _suite(
        qemu_spec,
        results,
        f"pytest_pinet/suite/test_qemu_board.py::test_console_login_sees_the_kernel_it_booted[board-qpi-{K61}]",
        f"pytest_pinet/suite/test_qemu_board.py::test_usb_adapter_and_disk_hang_off_xhci[board-qpi-{K61}]",
        f"pytest_pinet/suite/test_qemu_board.py::test_power_cycle_through_labgrid_restarts_the_board[board-qpi-{K61}]",
        f"{HALF}[board-qpi-{K61}-board->peer-stock]",
        f"{HALF}[board-qpi-{K13}-board->peer-stock]",
        f"pytest_pinet/suite/test_routing.py::test_download_through_the_board[board-qpi-{K61}-sfq]",
        images="debian12-k6.1,debian13",
    )
    outcomes = {}
    for case in junit.iter("testcase"):
        kind = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        outcomes[case.get("name")] = kind
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert outcomes == {
        f"test_console_login_sees_the_kernel_it_booted[board-qpi-{K61}]": "passed",
        f"test_usb_adapter_and_disk_hang_off_xhci[board-qpi-{K61}]": "passed",
        f"test_power_cycle_through_labgrid_restarts_the_board[board-qpi-{K61}]": "passed",
        f"test_tcp_half_duplex_goodput[board-qpi-{K61}-board->peer-stock]": "passed",
        f"test_tcp_half_duplex_goodput[board-qpi-{K13}-board->peer-stock]": "passed",
        f"test_download_through_the_board[board-qpi-{K61}-sfq]": "passed",
    }, done.stdout[-4000:]

    (run_dir,) = [p for p in results.iterdir() if (p / "measurements.jsonl").exists()]
    measured = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines()]
    sfq = [m for m in measured if m["context"]["scenario"] == "routing" and m["context"]["qdisc"] == "sfq"]
    assert sfq, "the SFQ routing case measured nothing"
    for m in sfq:
        # The board's own kernel ran sfq (this machine's kernel has none) and it carried
        # every byte of the download: the evidence the routing test itself checked.
        assert m["context"]["board"] == "qpi" and m["context"]["kernel"].startswith("6.1.")
        (on_lan,) = [e for e in m["detail"]["qdisc"] if e["interface"] == "eth1"]
        assert on_lan["kind"] == "sfq" and on_lan["sent_bytes"] > 0
        assert m["goodput_mbps"] > 0
    half = {m["context"]["image"]: m for m in measured if m["context"]["scenario"] == "ethernet"}
    assert set(half) == {"debian12-k6.1", "debian13"} and all(m["goodput_mbps"] > 0 for m in half.values())
    # Each figure carries what the board showed once booted, checked against the catalogue.
    assert half["debian12-k6.1"]["context"]["kernel"].startswith("6.1.")
    assert "Debian GNU/Linux 12" in half["debian12-k6.1"]["context"]["os"]
    assert "+deb13" in half["debian13"]["context"]["kernel"]
    assert "Debian GNU/Linux 13" in half["debian13"]["context"]["os"]
    iperf3 = {name: m["facts"]["board"]["iperf3_version"] for name, m in half.items()}
    assert iperf3["debian12-k6.1"] != iperf3["debian13"], iperf3  # each OS its own iperf3
    facts = [json.loads(line) for line in (run_dir / "facts.jsonl").read_text().splitlines()]
    flashes = [f for f in facts if f["kind"] == "flash"]
    assert [f["image"] for f in flashes] == ["debian12-k6.1", "debian13"]  # image by image
    assert all(f["method"] == "bmaptool" for f in flashes)  # the built images have block maps
    boots = {f["image"] or "power-cycle": f for f in facts if f["kind"] == "boot" and f["host"] == "qpi"}
    assert boots["debian12-k6.1"]["console_kernel"] == half["debian12-k6.1"]["context"]["kernel"]
    assert boots["debian13"]["console_kernel"] == half["debian13"]["context"]["kernel"]
    # The summary puts the two images side by side; Allure labels each result with its image.
    assert "images side by side (change against debian12-k6.1" in done.stdout
    labels = []
    for result in (results / "allure").glob("*-result.json"):
        data = json.loads(result.read_text())
        labels += [label["value"] for label in data.get("labels", []) if label["name"] == "image"]
    assert sorted(set(labels)) == ["debian12-k6.1", "debian13"]
    # The report a person opens groups the results by board, then image, then link.
    report = build_report(ROOT, results / "allure", tmp_path / "report", tmp_path / "history.jsonl").parent
    paths = tree_paths(report)
    halves = {p[:4] for p in paths if "Mbit/s · test_tcp_half_duplex_goodput" in p[-1]}
    assert halves == {
        ("qpi", "debian12-k6.1", "virtio", "ethernet"),
        ("qpi", "debian13", "virtio", "ethernet"),
    }, paths
    if chromium() is not None:
        with serve(report) as base:
            text = shoot(base, tmp_path / "tree.png", height=1600, expect="qpi")
        assert "Sort by: Order Earliest qpi " in text  # the tree opens on the board


def _running(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (killed, not yet reaped by init) has stopped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_down_stops_a_board_whose_test_run_was_killed(qemu_spec):
    """A test run killed with the board on leaves QEMU running; ``lab down`` stops it."""
    # The card as it leaves the factory: earlier tests of the module (and of the bisect
    # module sharing this lab) flashed other images onto it, and in the full suite the board
    # then found no kernel on its card (seen once in CI; not reproduced alone).
    virtual_lab.down(qemu_spec)
    virtual_lab.up(qemu_spec)
    script = (
        "import sys, time\n"
        "from labgrid import Environment\n"
        "from labgrid.driver import QEMUDriver\n"
        "target = Environment(config_file=sys.argv[1]).get_target('qpi')\n"
        "qemu = target.get_driver(QEMUDriver)\n"
        "qemu.on()\n"
        "print('on', flush=True)\n"
        "time.sleep(600)\n"
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", script, str(qemu_spec.env_file)], stdout=subprocess.PIPE, text=True
    )
    try:
        # labgrid's QEMUDriver.on() waits for QEMU without a limit: a QEMU that died at
        # start would hang the suite, so the test gives it two minutes.
        assert runner.stdout is not None
        ready, _, _ = select.select([runner.stdout], [], [], 120)
        assert ready and runner.stdout.readline().strip() == "on", "QEMU did not come up within 120 s"
        wait_until(lambda: bool(qemu_board.running_pid(qemu_spec)), timeout=20, pace=0.2)
        pid = qemu_board.running_pid(qemu_spec)
        assert pid, "QEMU did not start"
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        # A negative to prove: QEMU must still run a moment after its runner died (a child
        # killed with its parent goes within milliseconds); no condition to wait for.
        time.sleep(0.5)
        assert qemu_board.running_pid(qemu_spec) == pid, "QEMU should outlive the killed run"
        # The killed run's labgrid never removed its serial socket's directory.
        serial_dir = Path(qemu_board.serial_dirs_path(qemu_spec).read_text().split()[-1])
        assert serial_dir.name.startswith("labgrid-qemu-tmp-") and serial_dir.is_dir()
    finally:
        if runner.poll() is None:
            runner.kill()
    report = virtual_lab.down(qemu_spec)
    assert report.processes >= 1
    assert not serial_dir.exists(), "lab down leaves the killed run's serial socket directory"
    assert qemu_board.running_pid(qemu_spec) == 0
    assert not _running(pid)
    assert not virtual_lab.namespaces(qemu_spec.netns_prefix)
    virtual_lab.up(qemu_spec)  # the module's other tests may still need it
