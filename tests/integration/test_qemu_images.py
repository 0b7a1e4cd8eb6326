"""``pinet bisect`` on the QEMU board: among three images, name the one with a planted slowdown.

The board boots what its SD card holds; the card is written through the labgrid drivers the
provisioning code uses for a Pi's USB-SD-Mux (test_qemu_lab.py measures two OS releases
that way).  Here the test derives two images from Debian 12: one with a harmless
difference, one with a unit that shapes the board's LAN port to 5 Mbit/s, as a regression
an image could bring; bisect has to name the second.  The probes measure the LAN cable
(10 Mbit/s, shaped inside the board): its runs agree within 0.1 %, where the virtio port's
runs under TCG spread by 10-30 % and hid even a 70 % drop in three runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_pinet.virtlab import qemu_board, virtual_lab
from pytest_pinet.virtlab.topology import qemu_lab

pytestmark = [pytest.mark.qemu, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PINET = str(Path(sys.executable).with_name("pinet"))
LAN = "pytest_pinet/suite/test_adapters.py::test_adapter_half_duplex"
PLANTED_UNIT = """\
[Unit]
Description=planted regression: the board's LAN port shaped to 5 Mbit/s
After=pinet-board-setup.service
Before=ssh.service
[Service]
Type=oneshot
ExecStart=/usr/sbin/tc qdisc replace dev eth1 root tbf rate 5mbit burst 16kb latency 50ms
[Install]
WantedBy=multi-user.target
"""


@pytest.fixture(scope="module")
def spec(root_required, tmp_path_factory):
    for tool in ("mmdebstrap", "qemu-system-x86_64", "debugfs"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    made = qemu_lab("pinet92", state_root=tmp_path_factory.mktemp("qemu-images") / "state")
    virtual_lab.down(made)
    virtual_lab.up(made)
    yield made
    virtual_lab.down(made)


def _env(spec, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PINET_STATE_DIR": str(spec.state_root),
        "PINET_DB": f"sqlite:///{tmp_path / 'store.sqlite'}",
    }


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

    # --min-band 10: the planted slowdown halves the port; the emulated board's noise on a busy
    # 2-core host (its four vCPUs are threads of two cores) once put the unchanged image 2.1 %
    # under a reference measured within +-0.1, and the default 1 % called it bad.
    # --repeat 3: the band of two figures is a 99 % prediction band with one degree of freedom,
    # about 55 times their difference; a reference measured at 9.27 and 9.40 Mbit/s in a CI
    # trial made the planted 4.78 "no difference beyond noise".  Three figures give two.
    argv = [PINET, "bisect", "--images", "debian12-k6.1,debian12-same,debian12-slow", "--repeat", "3"]
    argv += ["--min-band", "10"]
    argv += ["--results", str(tmp_path / "results"), "--"]
    argv += [LAN, "-k", "link-usb and peer-stock", "--pinet-board", "qemu", "--pinet-virtual-lab", spec.name]
    argv += ["--pinet-duration", "2", "--pinet-omit", "1"]
    done = subprocess.run(
        argv, cwd=ROOT, env=_env(spec, tmp_path), capture_output=True, text=True, timeout=2400
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert "first bad image: debian12-slow (last good: debian12-same)" in out, out[-5000:]
    # Every image it tried is printed with its kernel, OS, verdict and figures per repetition.
    for image, verdict in (
        ("debian12-k6.1", "reference"),
        ("debian12-same", "good"),
        ("debian12-slow", "bad"),
    ):
        shown = re.search(
            rf"  {image}: kernel 6\.1\.\S+, [^\n]*: {verdict}\n\s+\S.*median ([0-9.]+) Mbit/s", out
        )
        assert shown is not None, out[-5000:]
    slow_line = r"  debian12-slow: [^\n]*: bad\n[^\n]*\(-[0-9.]+ %\) \[[0-9.]+, [0-9.]+, [0-9.]+\]"
    assert re.search(slow_line, out), out[-5000:]
    (saved,) = (tmp_path / "results").glob("bisect-*/bisect.json")
    bisection = json.loads(saved.read_text())
    tried = [p["image"] for p in bisection["probes"]]
    assert tried == ["debian12-k6.1", "debian12-slow", "debian12-same"]  # both ends, then the middle
    verdicts = {p["image"]: p["verdict"] for p in bisection["probes"]}
    assert verdicts == {"debian12-k6.1": "reference", "debian12-slow": "bad", "debian12-same": "good"}
    for probe in bisection["probes"]:
        (figures,) = probe["values"].values()
        assert len(figures) == 3  # every image measured three times, never once
    slow_figures = next(iter(bisection["probes"][1]["values"].values()))
    slow_mean = sum(slow_figures) / len(slow_figures)
    assert slow_mean < 6, slow_mean  # the planted shaper really slowed the port to ~4.7 Mbit/s
    assert qemu_board.card_path(spec).exists()
