"""Images as a test axis on the QEMU board: flash, verify, measure per image, and bisect.

The board boots what its SD card holds; the card is written through the labgrid drivers the
provisioning code uses for a Pi's USB-SD-Mux.  One run measures two OS releases (Debian 12
with kernel 6.12, Debian 13 with its own kernel and iperf3); ``pinet bisect`` then has to
name, among three images, the one into which this test planted a slowdown: a unit that
shapes the board's port to 100 Mbit/s, as a regression an image could bring.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_pinet.virtlab import lab, qemu_board
from pytest_pinet.virtlab.topology import qemu_lab

ROOT = Path(__file__).resolve().parents[2]
PINET = str(Path(sys.executable).with_name("pinet"))
HALF = "pytest_pinet/suite/test_ethernet.py::test_tcp_half_duplex_goodput"
PLANTED_UNIT = """\
[Unit]
Description=planted regression: the board's port shaped to 100 Mbit/s
After=pinet-board-setup.service
Before=ssh.service
[Service]
Type=oneshot
ExecStart=/usr/sbin/tc qdisc replace dev eth0 root tbf rate 100mbit burst 32kb latency 50ms
[Install]
WantedBy=multi-user.target
"""


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the QEMU lab needs root (network namespaces, taps)")
    for tool in ("mmdebstrap", "qemu-system-x86_64", "debugfs"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    made = qemu_lab("pinet9", state_root=tmp_path_factory.mktemp("qemu-images") / "state")
    lab.down(made)
    lab.up(made)
    yield made
    lab.down(made)


def _env(spec, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PINET_STATE_DIR": str(spec.state_root),
        "PINET_DB": f"sqlite:///{tmp_path / 'store.sqlite'}",
    }


def test_two_os_releases_are_flashed_verified_and_measured_side_by_side(spec, tmp_path):
    results = tmp_path / "results"
    images = ("debian12-k6.12", "debian13")
    tests = [f"{HALF}[board-qpi-image-{image}-board->peer-stock]" for image in images]
    argv = [sys.executable, "-m", "pytest", *tests, "--pinet-board", "qemu", "--pinet-virtual-lab", spec.name]
    argv += ["--pinet-image", ",".join(images), "--pinet-duration", "5", "--pinet-results", str(results)]
    argv += ["-p", "no:cacheprovider", "-p", "no:randomly", "--alluredir", str(tmp_path / "allure"), "-q"]
    done = subprocess.run(
        argv, cwd=ROOT, env=_env(spec, tmp_path), capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

    (run_dir,) = [p for p in results.iterdir() if (p / "measurements.jsonl").exists()]
    measured = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines()]
    by_image = {m["context"]["image"]: m for m in measured}
    assert set(by_image) == set(images)
    # Each figure carries what the board showed once booted, checked against the catalogue.
    assert by_image["debian12-k6.12"]["context"]["kernel"].startswith("6.12.")
    assert "+deb12" in by_image["debian12-k6.12"]["context"]["kernel"]
    assert "+deb13" in by_image["debian13"]["context"]["kernel"]
    assert "Debian GNU/Linux 12" in by_image["debian12-k6.12"]["context"]["os"]
    assert "Debian GNU/Linux 13" in by_image["debian13"]["context"]["os"]
    board_iperf3 = {name: m["facts"]["board"]["iperf3_version"] for name, m in by_image.items()}
    assert board_iperf3["debian12-k6.12"] != board_iperf3["debian13"], board_iperf3  # the OS's own iperf3
    assert all(m["goodput_mbps"] > 0 for m in measured)
    facts = [json.loads(line) for line in (run_dir / "facts.jsonl").read_text().splitlines()]
    flashes = [f for f in facts if f["kind"] == "flash"]
    assert [f["image"] for f in flashes] == list(images)  # image by image: one flash each
    assert all(f["method"] == "bmaptool" for f in flashes)  # the built images have block maps
    # The summary puts the two images side by side, the change against the first one.
    assert "images side by side (change against debian12-k6.12" in done.stdout
    labels = []
    for result in (tmp_path / "allure").glob("*-result.json"):
        data = json.loads(result.read_text())
        labels += [label["value"] for label in data.get("labels", []) if label["name"] == "image"]
    assert sorted(labels) == sorted(images)


def _derive(spec, base: str, name: str, unit: str | None, tmp_path: Path) -> dict[str, object]:
    """A copy of catalogue image ``base`` as image ``name``, with ``unit`` enabled in it."""
    data = yaml.safe_load(spec.env_file.read_text())
    (entry,) = [i for i in data["pinet"]["images"] if i["name"] == base]
    path = tmp_path / f"{name}.img"
    subprocess.run(["cp", "--sparse=always", entry["path"], str(path)], check=True)
    commands = tmp_path / f"{name}.debugfs"
    unit_file = tmp_path / f"{name}.service"
    unit_file.write_text(unit or "[Unit]\nDescription=a harmless difference\n")
    lines = [f"write {unit_file} /etc/systemd/system/pinet-test.service"]
    if unit:
        lines.append(
            "symlink /etc/systemd/system/multi-user.target.wants/pinet-test.service "
            "/etc/systemd/system/pinet-test.service"
        )
    commands.write_text("\n".join(lines) + "\n")
    subprocess.run(["debugfs", "-w", "-f", str(commands), str(path)], check=True, capture_output=True)
    derived = {k: v for k, v in entry.items() if k not in ("bmap", "sha256")}
    return {**derived, "name": name, "path": str(path)}


def test_bisect_names_the_image_with_the_planted_slowdown(spec, tmp_path):
    same = _derive(spec, "debian12-k6.1", "debian12-same", None, tmp_path)
    slow = _derive(spec, "debian12-k6.1", "debian12-slow", PLANTED_UNIT, tmp_path)
    data = yaml.safe_load(spec.env_file.read_text())
    data["pinet"]["images"] += [same, slow]
    spec.env_file.write_text(yaml.safe_dump(data, sort_keys=False))

    argv = [PINET, "bisect", "--images", "debian12-k6.1,debian12-same,debian12-slow", "--repeat", "4"]
    argv += ["--results", str(tmp_path / "results"), "--"]
    argv += [HALF, "-k", "peer-stock", "--pinet-board", "qemu", "--pinet-virtual-lab", spec.name]
    argv += ["--pinet-duration", "3", "--pinet-omit", "1"]
    done = subprocess.run(
        argv, cwd=ROOT, env=_env(spec, tmp_path), capture_output=True, text=True, timeout=2400
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert "first bad image: debian12-slow (last good: debian12-same)" in out, out[-5000:]
    (saved,) = (tmp_path / "results").glob("bisect-*/bisect.json")
    bisection = json.loads(saved.read_text())
    tried = [p["image"] for p in bisection["probes"]]
    assert tried == ["debian12-k6.1", "debian12-slow", "debian12-same"]  # both ends, then the middle
    verdicts = {p["image"]: p["verdict"] for p in bisection["probes"]}
    assert verdicts == {"debian12-k6.1": "reference", "debian12-slow": "bad", "debian12-same": "good"}
    for probe in bisection["probes"]:
        (figures,) = probe["values"].values()
        assert len(figures) == 4  # every image measured four times, never once
    slow_mean = sum(next(iter(bisection["probes"][1]["values"].values()))) / 4
    assert slow_mean < 110, slow_mean  # the planted shaper really slowed the board to ~94 Mbit/s
    assert qemu_board.card_path(spec).exists()
