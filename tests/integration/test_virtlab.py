"""The namespace lab for real: build, reach over pinned SSH, power through labgrid, tear down."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.remote import RemoteHost, SshEndpoint
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import lab_status, machine_settings, shaping, virtual_lab
from pytest_pinet.virtlab.topology import LabSpec


def _ps_in_lab(spec):
    pids = []
    for ns in virtual_lab.namespaces(spec.netns_prefix):
        pids += virtual_lab.netns_pids(ns)
    return pids


def test_up_builds_hosts_link_and_pinned_ssh(fresh_lab):
    spec = fresh_lab
    env_file = virtual_lab.up(spec)
    assert virtual_lab.namespaces(spec.netns_prefix) == ["pinet9-inet", "pinet9-pc", "pinet9-pi"]
    inventory = load_inventory(env_file)
    roles = {h.name: h.role for h in inventory.hosts.values()}
    assert roles == {"pi": "board", "pc": "peer", "inet": "peer"}
    (route,) = inventory.routes
    (disk,) = inventory.disks
    assert disk.scratch and disk.host == "pi" and disk.device.startswith("/dev/loop")
    assert (route.board, route.lan.name, route.wan.name) == ("pi", "eth", "usb")
    pi = RemoteHost(inventory.hosts["pi"].endpoint)
    pc = RemoteHost(inventory.hosts["pc"].endpoint)
    try:
        # The board reaches each peer over its own emulated cable, not the management network.
        for link, device in ((inventory.link("eth"), "eth0"), (inventory.link("usb"), "eth1")):
            out = pi.check(["ping", "-c", "1", "-W", "2", link.peer_address])
            assert "1 received" in out
            assert f"dev {device}" in pi.check(["ip", "route", "get", link.peer_address])
        # The peers do not reach each other until a test provisions the routed path.
        assert not pc.run(["ping", "-c", "1", "-W", "1", route.wan.peer_address]).ok
    finally:
        pi.close()
        pc.close()
    for host, device in (("pi", "eth0"), ("pi", "eth1"), ("pc", "eth0"), ("inet", "eth0")):
        offloads = shaping.offloads_state(spec.netns(host), device)
        assert offloads["tso"] is False and offloads["gso"] is False and offloads["gro"] is False
        qdisc = shaping.describe(spec.netns(host), device)
        assert "tbf" in qdisc
        rate = re.search(r"rate (\d+)Kbit", qdisc)
        assert rate is not None, qdisc
        assert int(rate.group(1)) == pytest.approx(shaping.Shaping(1000).rate_kbit, rel=1e-3)
    status = lab_status.status(spec)
    assert status["up"] is True
    hosts = status["hosts"]
    assert isinstance(hosts, list)
    assert all(h["sshd_running"] for h in hosts)
    # Idempotent: a second up keeps the running lab (same host keys).
    keys_before = (spec.state_dir / "known_hosts").read_text()
    virtual_lab.up(spec)
    assert (spec.state_dir / "known_hosts").read_text() == keys_before


def test_wrong_host_key_is_refused(fresh_lab, tmp_path):
    spec = fresh_lab
    virtual_lab.up(spec)
    inventory = load_inventory(spec.env_file)
    good = inventory.hosts["pi"].endpoint
    # The peer's key presented for the board's address: a swapped or impostor host.
    pc_key = (spec.host_dir("pc") / "ssh_host_ed25519_key.pub").read_text().split()
    bad_known = tmp_path / "known_hosts_bad"
    bad_known.write_text(f"{good.address} {pc_key[0]} {pc_key[1]}\n")
    impostor = RemoteHost(
        SshEndpoint(good.name, good.address, good.username, good.port, good.identity, bad_known)
    )
    with pytest.raises(LabFault) as info:
        impostor.run(["true"])
    assert info.value.category == "ssh"
    assert "BadHostKey" in str(info.value) or "does not match" in str(info.value)
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    stranger = RemoteHost(
        SshEndpoint(good.name, good.address, good.username, good.port, good.identity, empty)
    )
    with pytest.raises(LabFault, match="not found in known_hosts"):
        stranger.run(["true"])


def test_power_cycle_through_labgrid(fresh_lab):
    from labgrid import Environment
    from labgrid.driver import ExternalPowerDriver

    spec = fresh_lab
    virtual_lab.up(spec)
    env = Environment(config_file=str(spec.env_file))
    target = env.get_target("pi")
    power = target.get_driver(ExternalPowerDriver)
    inventory = load_inventory(spec.env_file)
    host = RemoteHost(inventory.hosts["pi"].endpoint, connect_timeout=2)
    try:
        assert host.check(["echo", "alive"]).strip() == "alive"
        power.off()
        assert virtual_lab.netns_pids(spec.netns("pi")) == []
        host.close()
        with pytest.raises(LabFault) as info:
            host.run(["true"])
        assert info.value.category in {"unreachable", "ssh"}
        power.on()
        assert host.check(["echo", "back"]).strip() == "back"
    finally:
        host.close()
        target.deactivate_all_drivers()


def test_down_removes_everything_and_is_idempotent(fresh_lab):
    spec = fresh_lab
    with machine_settings.machine_lock():  # the machine's own value, whichever other lab is up
        saved = machine_settings.BACKLOG_SAVED
        backlog_before = (saved if saved.exists() else machine_settings.BACKLOG).read_text().strip()
    virtual_lab.up(spec)
    assert _ps_in_lab(spec)
    report = virtual_lab.down(spec)
    assert sorted(report.namespaces) == ["pinet9-inet", "pinet9-pc", "pinet9-pi"]
    assert len(report.disks) == 1 and virtual_lab.loop_devices(spec.state_dir) == []  # the scratch disk too
    with machine_settings.machine_lock():  # the last lab of the machine put the global setting back
        if not machine_settings.holders():
            assert machine_settings.BACKLOG.read_text().strip() == backlog_before
            assert not machine_settings.BACKLOG_SAVED.exists()
    assert report.processes >= 3  # every host's sshd
    assert virtual_lab.namespaces(spec.netns_prefix) == []
    assert virtual_lab.root_links("pinet9-") == []
    assert not spec.state_dir.exists()
    assert not spec.state_root.exists()  # lock file and empty state root are gone too
    assert virtual_lab.down(spec).nothing


def test_down_cleans_after_a_killed_up(fresh_lab):
    """A half-built lab (up killed after two steps) leaves names down can find."""
    spec = fresh_lab
    subprocess.run(["ip", "netns", "add", spec.netns("pi")], check=True)
    subprocess.run(["ip", "link", "add", spec.bridge, "type", "bridge"], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", spec.netns("pi"), "sleep", "300"])
    spec.state_dir.mkdir(parents=True)
    # `ip netns exec` enters the namespace before it execs sleep; on a busy machine that takes
    # a moment, and a down() that looks earlier finds no process to stop.
    wait_until(
        lambda: bool(
            subprocess.run(
                ["ip", "netns", "pids", spec.netns("pi")], capture_output=True, text=True
            ).stdout.split()
        ),
        timeout=10,
        pace=0.05,
    )
    try:
        report = virtual_lab.down(spec)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert report.namespaces == ["pinet9-pi"] and report.links == ["pinet9-br"]
    assert report.processes == 1
    assert virtual_lab.namespaces(spec.netns_prefix) == [] and virtual_lab.root_links("pinet9-") == []


def test_cli_reports_errors_in_one_line(fresh_lab):
    run = subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", "lab", "vhost-power", "--lab", "pinet9", "ghost", "on"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("pinet: no host 'ghost'")
    assert "Traceback" not in run.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "pytest_pinet.cli", "lab", "up", "--lab", "evil;rm"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "lab name" in bad.stderr and "Traceback" not in bad.stderr


def test_lab_names_are_validated():
    with pytest.raises(ValueError, match="lab name"):
        LabSpec(name="pinet-$(id)")


def test_the_machine_settings_stay_raised_while_any_lab_holds_them(root_required):
    """Two labs coming and going at once (the test command's two workers): the one going down
    first leaves the backlog raised for the other; the last puts the machine's value back."""
    with machine_settings.machine_lock():
        others = machine_settings.holders()
        saved = machine_settings.BACKLOG_SAVED
        original = (saved if saved.exists() else machine_settings.BACKLOG).read_text().strip()
    machine_settings.hold("pinet-settings-a")
    machine_settings.hold("pinet-settings-b")
    try:
        machine_settings.release("pinet-settings-a")
        assert int(machine_settings.BACKLOG.read_text()) >= machine_settings.LAB_BACKLOG
        assert "pinet-settings-b" in machine_settings.holders()
    finally:
        machine_settings.release("pinet-settings-a")
        machine_settings.release("pinet-settings-b")
    with machine_settings.machine_lock():
        if not others and not machine_settings.holders():
            assert machine_settings.BACKLOG.read_text().strip() == original
            assert not saved.exists()
