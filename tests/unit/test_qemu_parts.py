"""The QEMU board's plan, env target, image cache and settings, without booting anything."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import cast

import pytest
import yaml

from pytest_pinet.errors import ConfigError, PinetError
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.measure.base import board_settle
from pytest_pinet.traffic.adaptive import SettleRule
from pytest_pinet.virtlab import envfile, qemu_board, qemu_image, virtual_lab
from pytest_pinet.virtlab.topology import LabSpec, lab_spec, qemu_lab

pytest_plugins = ["pytester"]


def _image(tmp_path: Path) -> qemu_image.BoardImage:
    images = {}
    for name, version, release in (
        ("debian12-k6.1", "12", "6.1.0-56-amd64"),
        ("debian13", "13", "6.12.117+deb13-amd64"),
    ):
        images[name] = qemu_image.BuiltImage(
            name, tmp_path / f"{name}.img", None, "debian", version, release, "ab" * 32
        )
    return qemu_image.BoardImage(tmp_path, images, "ssh-ed25519 AAAAhostkey", 1.0)


@pytest.fixture
def spec(tmp_path):
    made = qemu_lab("pinet3", image="debian13", state_root=tmp_path / "state")
    made.state_dir.mkdir(parents=True)
    # Base64 holds '+' and '/': the board's command line must carry them intact.
    (made.state_dir / "id_ed25519.pub").write_text("ssh-ed25519 AAAA+b/c= pinet-client@pinet3\n")
    (made.state_dir / "id_ed25519").write_text("not a key: the inventory only checks it exists\n")
    return made


def test_qemu_lab_plan_puts_the_slow_usb_port_on_the_lan(spec):
    assert spec.is_qemu and spec.board_host.name == "qpi"
    (route,) = spec.routes
    lan = next(link for link in spec.links if link.name == route.lan)
    assert lan.adapter == "qemu-usb-net" and lan.board_interface == "eth1"
    assert lab_spec("pinet3", board="netns").board_host.name == "pi"
    with pytest.raises(ValueError, match="board must be one of"):
        lab_spec("pinet3", board="vmware")


def test_boot_args_carry_addresses_key_and_shaper_per_port(spec):
    words = qemu_board.boot_args(spec, "ssh-ed25519 AAAA+b/c= comment").split()
    assert "pinet.authkey=ssh-ed25519,AAAA+b/c=" in words
    ports = [w.removeprefix("pinet.if=").split(",") for w in words if w.startswith("pinet.if=")]
    by_name = {p[1]: p for p in ports}
    assert by_name["mgmt0"][2] == f"{spec.mgmt_address('qpi')}/24"
    assert by_name["eth0"][2] == "10.204.3.1/24" and by_name["eth0"][4].startswith("tbf+rate+")
    # the LAN port is a 10 Mbit/s cable; its bucket holds 100 ms of it (the host's stalls of
    # the emulated CPUs), not the 16 KiB the peer's end of the same cable has
    assert by_name["eth1"][4].split("+")[:5] == ["tbf", "rate", "9844kbit", "burst", "125000"]
    macs = [p[0] for p in ports]
    assert len(set(macs)) == 3 and all(m.startswith("52:54:00:5e:03:") for m in macs)


def test_extra_args_put_the_adapter_and_disk_on_xhci(spec, tmp_path):
    args = shlex.split(qemu_board.extra_args(spec))
    devices = [args[i + 1] for i, a in enumerate(args) if a == "-device"]
    assert "qemu-xhci,id=xhci" in devices
    assert any(d.startswith("usb-net,bus=xhci.0,netdev=n-eth1") for d in devices)
    assert any(d.startswith("usb-storage,bus=xhci.0") for d in devices)
    assert sum(d.startswith("virtio-net-pci") for d in devices) == 2
    # The initrd is the one the board's firmware loads from its SD card before each boot.
    assert args[args.index("-initrd") + 1] == str(qemu_board.firmware_dir(spec) / "initrd.img")
    assert args[args.index("-accel") + 1] == "tcg"


def test_env_file_of_a_qemu_lab_is_a_valid_inventory(spec, tmp_path):
    image = _image(tmp_path)
    (spec.state_dir / "known_hosts").write_text("")
    envfile.write_env_file(spec, {"usb-disk": qemu_board.USB_DISK_DEVICE}, image)
    data = yaml.safe_load(spec.env_file.read_text())
    drivers = data["targets"]["qpi"]["drivers"]
    assert set(drivers) == {"QEMUDriver", "ShellDriver", "PinetSDMuxDriver", "PinetSDCardDriver"}
    # The card keeps what the board wrote (no snapshot), as a real card does.
    assert "disk_opts" not in drivers["QEMUDriver"]
    assert data["images"]["sd-card"] == str(qemu_board.card_path(spec))
    assert data["images"]["firmware-kernel"] == str(qemu_board.firmware_dir(spec) / "vmlinuz")
    assert data["tools"]["qemu"] == str(qemu_board.wrapper_path(spec))
    assert data["imports"] == ["pytest_pinet.virtlab.sd_card"]
    inventory = load_inventory(spec.env_file)
    names = [i.name for i in inventory.catalogue.images]
    assert names == ["debian12-k6.1", "debian13"]
    assert all(inventory.catalogue.can_take("qpi", i) for i in inventory.catalogue.images)
    assert inventory.catalogue.deliveries["qpi"] == {"sd-card"}
    assert inventory.catalogue.get("debian13", "x").kernel_matches("6.12.117+deb13-amd64")
    assert inventory.hosts["qpi"].power_on_at_start and not inventory.hosts["pc"].power_on_at_start
    # an emulated board's runs stop once their mean is known to 10 %; the namespaces keep the run's rule
    assert inventory.hosts["qpi"].adaptive_precision_pct == 10.0
    assert inventory.hosts["pc"].adaptive_precision_pct is None
    (disk,) = inventory.disks
    assert disk.device == qemu_board.USB_DISK_DEVICE and disk.scratch


def test_power_on_at_start_must_be_a_boolean(spec, tmp_path):
    (spec.state_dir / "known_hosts").write_text("")
    envfile.write_env_file(spec, {}, _image(tmp_path))
    data = yaml.safe_load(spec.env_file.read_text())
    data["pinet"]["hosts"]["qpi"]["power_on_at_start"] = "yes; reboot"
    spec.env_file.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="power_on_at_start must be true or false"):
        load_inventory(spec.env_file)


def test_a_boards_adaptive_precision_widens_the_runs_rule_and_is_checked(spec, tmp_path):
    (spec.state_dir / "known_hosts").write_text("")
    envfile.write_env_file(spec, {}, _image(tmp_path))
    inventory = load_inventory(spec.env_file)
    rule = SettleRule(5, 0.5)
    assert board_settle(rule, inventory, "qpi") == SettleRule(5, 10.0)
    assert board_settle(rule, inventory, "pc") is rule  # no precision of its own
    assert board_settle(SettleRule(5, 20.0), inventory, "qpi") == SettleRule(5, 20.0)  # the wider
    assert board_settle(None, inventory, "qpi") is None  # fixed-duration runs stay fixed
    data = yaml.safe_load(spec.env_file.read_text())
    data["pinet"]["hosts"]["qpi"]["adaptive_precision_pct"] = 80
    spec.env_file.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="adaptive_precision_pct must be at most 50 %"):
        load_inventory(spec.env_file)


def test_the_route_through_the_qemu_board_warms_up_longer_and_is_checked(spec, tmp_path):
    from pytest_pinet.measure.routing import route_options
    from pytest_pinet.traffic.iperf3_runner import Iperf3Options

    (spec.state_dir / "known_hosts").write_text("")
    envfile.write_env_file(spec, {}, _image(tmp_path))
    (route,) = load_inventory(spec.env_file).routes
    assert route.omit_s == 3  # slow start through the 10 Mbit/s cable recovers into second 3
    assert route_options(Iperf3Options(omit=2), route).omit == 3
    assert route_options(Iperf3Options(omit=5), route).omit == 5  # a longer one asked for stays
    unrouted = dataclasses.replace(route, omit_s=None)
    assert route_options(Iperf3Options(omit=2), unrouted) == Iperf3Options(omit=2)
    data = yaml.safe_load(spec.env_file.read_text())
    data["pinet"]["routes"][0]["omit_s"] = 0
    spec.env_file.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"pinet.routes\[0\].omit_s"):
        load_inventory(spec.env_file)


def test_a_lab_up_with_another_image_is_refused_by_name(spec):
    built = {"board": "qemu", "image": "debian12-k6.1", "accel": "tcg"}
    (spec.state_dir / "lab.json").write_text(json.dumps(built))
    with pytest.raises(
        PinetError, match=r"image debian12-k6.1 \(asked for debian13\).*pinet lab down --lab pinet3"
    ):
        virtual_lab.check_same_build(spec)
    (spec.state_dir / "lab.json").write_text(json.dumps({**built, "image": "debian13"}))
    virtual_lab.check_same_build(spec)


def test_image_cache_key_follows_the_recipe_and_loads_only_complete_images(tmp_path, monkeypatch):
    key = qemu_image.image_key()
    assert len(key) == 12 and key == qemu_image.image_key()
    monkeypatch.setattr(qemu_image, "PACKAGES", (*qemu_image.PACKAGES, "strace"))
    assert qemu_image.image_key() != key
    # The images carry the UDP generator built: a changed generator is a changed recipe.
    from pytest_pinet.host_programs import UDPGEN_SOURCE as SOURCE
    from pytest_pinet.traffic import udpgen

    assert udpgen.SOURCE == SOURCE
    changed = tmp_path / "pinet-udpgen.c"
    changed.write_bytes(SOURCE.read_bytes() + b"\n/* changed */\n")
    with_packages = qemu_image.image_key()
    monkeypatch.setattr(qemu_image, "UDPGEN_SOURCE", changed)
    assert qemu_image.image_key() != with_packages
    assert qemu_image.load(tmp_path) is None  # nothing there
    entry = {"file": "a.img", "os_id": "debian", "os_version": "12", "kernel_release": "6.1.0-1-amd64"}
    manifest = {"host_key": "ssh-ed25519 AAAA", "images": {"a": {**entry, "sha256": "00" * 32}}}
    (tmp_path / "image.json").write_text(json.dumps(manifest))
    assert qemu_image.load(tmp_path) is None  # the manifest without its files: incomplete
    (tmp_path / "a.img").write_bytes(b"x")
    image = qemu_image.load(tmp_path)
    assert image is not None and image.image("a").kernel_release == "6.1.0-1-amd64"
    with pytest.raises(PinetError, match=r"no image 'b'; choose one of a"):
        image.image("b")


def test_board_settings_are_validated_naming_their_source(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    # labgrid's own plugin keeps process-global state that refuses a second in-process run.
    result = pytester.runpytest("-p", "no:labgrid", "--pinet-board", "vmware")
    result.stderr.fnmatch_lines(["*--pinet-board*expected one of both, netns, qemu*vmware*"])
    result = pytester.runpytest("-p", "no:labgrid", "--pinet-board-image", "4.19")
    result.stderr.fnmatch_lines(
        ["*--pinet-board-image*expected one of debian12-k6.1, debian12-k6.12, debian13*"]
    )


@pytest.mark.parametrize(
    ("context", "rule"),
    [
        ({"scenario": "ethernet", "duplex": "half"}, "qpi-ethernet-half-duplex"),
        (
            {
                "scenario": "routing",
                "direction": "download",
                "duplex": "half",
                "qdisc": "sfq",
                "link_speed_mbps": 10,
            },
            "qpi-routing-download-sfq",
        ),
        (
            {
                "scenario": "routing",
                "direction": "download",
                "duplex": "full",
                "qdisc": "sfq",
                "rate_target_mbps": 1,
                "link_speed_mbps": 10,
            },
            "qpi-routing-full-download-fair",
        ),
        (
            {
                "scenario": "routing",
                "direction": "upload",
                "duplex": "full",
                "rate_target_mbps": 2.5,
                "link_speed_mbps": 10,
            },
            "qpi-routing-full-upload",
        ),
        ({"scenario": "udp-sendto", "protocol": "UDP", "direction": "board->peer"}, "qpi-udp-over-the-link"),
    ],
)
def test_the_qemu_board_is_judged_by_its_own_rules(context, rule):
    """Each qpi rule outranks the generic rule for the same case; other boards keep theirs."""
    from pytest_pinet.judge.threshold_rules import load_thresholds

    thresholds = load_thresholds(
        Path(__file__).resolve().parents[2] / "pytest_pinet" / "data" / "thresholds.yaml"
    )
    full = {"link_speed_mbps": 1000, "mtu": 1500, "rate_target_mbps": 0, **context}
    chosen = thresholds.rule_for({**full, "board": "qpi"})
    assert chosen is not None and chosen.rule_id == rule
    other = thresholds.rule_for({**full, "board": "pi"})
    assert other is None or not other.rule_id.startswith("qpi-")
    if full["link_speed_mbps"] == 1000:
        assert other is not None  # a Pi's GbE case has its generic rule; 10 Mbit/s is qpi's own


def test_lab_down_removes_only_the_serial_dirs_nobody_listens_on(tmp_path):
    """labgrid's QEMUDriver leaves its socket's directory when its process is killed; the one
    a living driver still listens on, and anything not labgrid's, stay."""
    import socket
    from types import SimpleNamespace

    from pytest_pinet.virtlab.qemu_board import remove_serial_dirs, serial_dirs_path

    spec = cast(LabSpec, SimpleNamespace(state_dir=tmp_path / "state"))
    spec.state_dir.mkdir()
    stale, live, foreign = (tmp_path / n for n in ("labgrid-qemu-tmp-a", "labgrid-qemu-tmp-b", "mine"))
    for directory in (stale, live, foreign):
        directory.mkdir()
    (stale / "serialrw").touch()  # the socket file a killed process left
    (foreign / "serialrw").touch()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(live / "serialrw"))
    listener.listen(0)
    try:
        serial_dirs_path(spec).write_text(f"{stale}\n{live}\n{foreign}\n{stale}\n")
        assert remove_serial_dirs(spec) == [str(stale)]
    finally:
        listener.close()
    assert not stale.exists() and live.is_dir() and foreign.is_dir()
