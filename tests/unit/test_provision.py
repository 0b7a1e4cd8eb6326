"""Provisioning: writing images through real labgrid drivers, verifying what booted."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml
from labgrid import Environment

import pytest_pinet.virtlab.sd_card  # noqa: F401 - registers the virtual card's drivers
from pytest_pinet.errors import LabFault
from pytest_pinet.host.facts import facts_from_output
from pytest_pinet.host.facts_parse import image_of, parse_image_marker
from pytest_pinet.host.remote import CommandResult
from pytest_pinet.lab.image_catalogue import CatalogueImage, Netboot
from pytest_pinet.lab.provision import already_runs, flash, mismatches, verify
from pytest_pinet.model.host_facts import HostFacts
from pytest_pinet.virtlab import sd_card

IMAGE = CatalogueImage(
    "deb13", "debian", "13", "6.12.*+deb13-amd64", "sd-card", sha256="ab" * 32, arch="x86_64"
)


def _facts(**changes: object) -> HostFacts:
    base = HostFacts(
        host="qpi",
        kernel="6.12.117+deb13-amd64",
        os_name="Debian GNU/Linux 13 (trixie)",
        os_id="debian",
        os_version="13",
        model="",
        cpus=2,
        governor=None,
        cpu_mhz=None,
        temperature_c=None,
        throttled=None,
        iperf3_version="iperf 3.18",
        arch="x86_64",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_what_booted_is_checked_against_the_catalogue():
    assert mismatches(IMAGE, _facts()) == []
    wrong = _facts(kernel="6.1.0-56-amd64", os_version="12", arch="aarch64")
    found = mismatches(IMAGE, wrong)
    assert found == [
        "kernel 6.1.0-56-amd64 (catalogue: 6.12.*+deb13-amd64)",
        "os debian 12 (catalogue: debian 13)",
        "arch aarch64 (catalogue: x86_64)",
    ]
    with pytest.raises(LabFault, match=r"qpi was given image deb13 but booted kernel 6.1.0-56") as caught:
        verify("qpi", IMAGE, wrong)
    assert caught.value.category == "provisioning" and caught.value.host == "qpi"


def test_a_board_runs_an_image_only_with_its_marker_and_the_same_kernel():
    marker = {"name": "deb13", "identity": "ab" * 32, "kernel": "6.12.117+deb13-amd64"}
    assert already_runs(IMAGE, _facts(image="deb13", image_marker=marker))
    assert not already_runs(IMAGE, _facts())  # no marker: flashed by hand, or never
    other_bytes = {**marker, "identity": "cd" * 32}
    assert not already_runs(IMAGE, _facts(image="deb13", image_marker=other_bytes))
    # The marker is trusted only while the kernel it was verified with still runs.
    assert image_of(marker, "6.12.117+deb13-amd64") == "deb13"
    assert image_of(marker, "6.12.200+deb13-amd64") == ""
    assert parse_image_marker("not json") == {} and parse_image_marker("") == {}


def test_the_facts_script_output_carries_arch_and_marker():
    out = (
        "@@pinet:kernel\n6.12.117+deb13-amd64\n@@pinet:arch\nx86_64\n@@pinet:image\n"
        '{"identity": "x", "kernel": "6.12.117+deb13-amd64", "name": "deb13"}\n'
        '@@pinet:os\nID=debian\nVERSION_ID="13"\n'
    )
    facts = facts_from_output("qpi", out, [])
    assert facts.arch == "x86_64" and facts.image == "deb13" and facts.os_version == "13"


def _card_target(tmp_path: Path):
    card = tmp_path / "card.img"
    env = tmp_path / "env.yaml"
    env.write_text(
        yaml.safe_dump(
            {
                "targets": {
                    "board": {
                        "resources": {"PinetSDCard": {"path": str(card)}},
                        "drivers": {"PinetSDMuxDriver": {}, "PinetSDCardDriver": {}},
                    }
                },
                "imports": ["pytest_pinet.virtlab.sd_card"],
            }
        )
    )
    return Environment(config_file=str(env)).get_target("board"), card


def card_written(tmp_path: Path, with_bmap: bool) -> None:
    """An image written onto the card through the mux and writer, by dd or (with a bmap file
    beside it) by bmaptool, a tool of its own: tests/integration/test_real_tools.py's."""
    if with_bmap and shutil.which("bmaptool") is None:
        pytest.skip("bmaptool is not installed (the bmap-tools package)")
    target, card = _card_target(tmp_path)
    source = tmp_path / "image.img"
    source.write_bytes(b"\x01" * 8192 + b"\x00" * 65536 + b"\x02" * 4096)
    card.write_bytes(b"\xff" * 200000)  # an older, longer image: nothing of it may remain
    if with_bmap:
        import subprocess

        subprocess.run(["bmaptool", "create", "-o", f"{source}.bmap", str(source)], check=True)
    image = dataclasses.replace(IMAGE, path=source, sha256=None)
    done = flash(target, image)
    assert done.method == ("bmaptool" if with_bmap else "dd") and done.delivery == "sd-card"
    assert card.read_bytes()[: source.stat().st_size].rstrip(b"\xff") == source.read_bytes().rstrip(b"\xff")
    if not with_bmap:
        assert card.read_bytes() == source.read_bytes()
    assert sd_card.read_mode(card) == "dut"  # the card is back in the board


def test_an_sd_card_image_is_written_through_the_mux_and_writer(tmp_path):
    card_written(tmp_path, with_bmap=False)


def test_the_writer_refuses_a_card_that_is_in_the_board(tmp_path):
    target, card = _card_target(tmp_path)
    writer = target.get_driver("PinetSDCardDriver")
    source = tmp_path / "image.img"
    source.write_bytes(b"x" * 4096)
    with pytest.raises(Exception, match="is in the board"):
        writer.write_image(filename=str(source))
    mux = target.get_driver("PinetSDMuxDriver")
    with pytest.raises(Exception, match="not supported"):
        mux.set_mode("sideways")
    mux.set_mode("host")
    writer.write_image(filename=str(source))
    assert card.read_bytes() == source.read_bytes()


def test_a_missing_image_file_is_a_provisioning_fault(tmp_path):
    target, _ = _card_target(tmp_path)
    with pytest.raises(LabFault, match="does not exist"):
        flash(target, dataclasses.replace(IMAGE, path=tmp_path / "gone.img", sha256=None))


def test_a_netboot_image_is_staged_through_labgrids_tftp_provider(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "HOME", str(tmp_path / "home")
    )  # the staged config.txt lands here, not in the user's cache
    root = tmp_path / "tftp"
    root.mkdir()
    env = tmp_path / "env.yaml"
    target_config = {
        "resources": {"TFTPProvider": {"internal": str(root) + "/", "external": ""}},
        "drivers": {"TFTPProviderDriver": {}},
    }
    env.write_text(yaml.safe_dump({"targets": {"pi5": target_config}}))
    target = Environment(config_file=str(env)).get_target("pi5")
    files = {}
    for name in ("kernel_2712.img", "bcm2712-rpi-5-b.dtb", "initramfs_2712"):
        files[name] = tmp_path / name
        files[name].write_bytes(name.encode())
    image = dataclasses.replace(
        IMAGE,
        delivery="netboot",
        netboot=Netboot(files["kernel_2712.img"], files["bcm2712-rpi-5-b.dtb"], files["initramfs_2712"]),
    )
    done = flash(target, image)
    assert done.method == "tftp"
    config = (root / "config.txt").read_text()
    assert "kernel=kernel_2712.img" in config and "device_tree=bcm2712-rpi-5-b.dtb" in config
    assert "initramfs initramfs_2712 followkernel" in config
    assert (root / "kernel_2712.img").read_bytes() == b"kernel_2712.img"


class _Board:
    """A board's SSH end for the strategy: facts with or without the image's marker."""

    name = "board"
    sudo = False

    def __init__(self, marker: str) -> None:
        from pytest_pinet.host.platform import LINUX

        self.platform = LINUX
        self.marker = marker
        self.scripts: list[str] = []

    def run_shell(self, script: str, timeout: float = 60.0) -> CommandResult:
        self.scripts.append(script)
        out = (
            "@@pinet:kernel\n6.12.117+deb13-amd64\n@@pinet:arch\nx86_64\n"
            f"@@pinet:image\n{self.marker}\n@@pinet:os\nID=debian\nVERSION_ID=13\n"
        )
        return CommandResult("sh", 0, out, "")

    def run(self, argv, timeout: float = 60.0, root: bool = False) -> CommandResult:
        return CommandResult(" ".join(map(str, argv)), 0, "", "")


def _strategy(tmp_path: Path):
    from pytest_pinet.lab.strategy import PinetBoardStrategy

    card = tmp_path / "card.img"
    env = tmp_path / "env.yaml"
    board = {
        "resources": {
            "PinetSDCard": {"path": str(card)},
            "NetworkService": {"address": "127.0.0.1", "username": "root", "port": 9},
        },
        "drivers": {
            "ExternalPowerDriver": {"cmd_on": "true", "cmd_off": "true"},
            "PinetSDMuxDriver": {},
            "PinetSDCardDriver": {},
        },
    }
    env.write_text(yaml.safe_dump({"targets": {"board": board}}))
    target = Environment(config_file=str(env)).get_target("board")
    return PinetBoardStrategy(target, "pinet-strategy"), card


def test_a_board_already_running_the_image_is_not_reflashed(tmp_path):
    strategy, card = _strategy(tmp_path)
    marker = '{"identity": "' + "ab" * 32 + '", "kernel": "6.12.117+deb13-amd64", "name": "deb13"}'
    strategy.remote = _Board(marker)
    strategy.force("reachable")
    strategy.use_image(IMAGE)
    strategy.transition("provisioned")
    assert strategy.flashes == [] and not card.exists()  # marker and kernel agree: kept as it is
    assert strategy.booted.image == "deb13"


def test_flashed_is_a_state_before_power_on_and_needs_an_image(tmp_path):
    strategy, card = _strategy(tmp_path)
    strategy.remote = _Board("")
    with pytest.raises(Exception, match="flashed needs an image"):
        strategy.transition("flashed")
    source = tmp_path / "image.img"
    source.write_bytes(b"\x07" * 4096)
    strategy.use_image(dataclasses.replace(IMAGE, path=source, sha256=None))
    strategy.transition("flashed")
    assert card.read_bytes() == source.read_bytes() and [f.image for f in strategy.flashes] == ["deb13"]


class _WrongBoard(_Board):
    """A board that boots another kernel than the catalogue says (a card the writer missed)."""

    def run_shell(self, script: str, timeout: float = 60.0) -> CommandResult:
        self.scripts.append(script)
        out = "@@pinet:kernel\n6.1.0-41-amd64\n@@pinet:arch\nx86_64\n@@pinet:image\n\n@@pinet:os\nID=debian\nVERSION_ID=12\n"
        return CommandResult("sh", 0, out, "")


def test_a_board_that_boots_the_wrong_image_is_a_provisioning_fault_and_keeps_no_marker(
    tmp_path, monkeypatch
):
    strategy, card = _strategy(tmp_path)
    board = _WrongBoard("")
    strategy.remote = board
    monkeypatch.setattr(strategy, "_cycle_and_wait", lambda: None)  # power: its own tests
    source = tmp_path / "image.img"
    source.write_bytes(b"\x07" * 4096)
    strategy.use_image(dataclasses.replace(IMAGE, path=source, sha256=None))
    with pytest.raises(
        LabFault,
        match=r"provisioning.*booted kernel 6\.1\.0-41-amd64 \(catalogue: 6\.12\.\*\+deb13-amd64\).*debian 12",
    ):
        strategy.transition("provisioned")
    assert card.read_bytes() == source.read_bytes()  # it was flashed ...
    assert strategy.status != strategy.status.provisioned and strategy.booted is None  # ... never provisioned
    assert not any("/var/lib/pinet/image" in s and "printf" in s for s in board.scripts)  # no marker written
