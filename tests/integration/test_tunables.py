"""Tunables on the virtual lab's hosts: applied for real, read back, restored, or refused."""

from __future__ import annotations

import pytest

from pytest_pinet.errors import Unsupported
from pytest_pinet.host.cpu_tunables import FixedClock, Governor, IrqAffinity, QueueMask
from pytest_pinet.host.net_tunables import Mtu, Offloads, Qdisc, Sysctl
from pytest_pinet.host.profiles import apply_profile, profiles_from_data
from pytest_pinet.host.remote import RemoteHost
from pytest_pinet.host.tunables import apply_checked
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.virtlab import virtual_lab


@pytest.fixture
def board(fresh_lab):
    virtual_lab.up(fresh_lab)
    inventory = load_inventory(fresh_lab.env_file)
    host = RemoteHost(inventory.hosts["pi"].endpoint)
    yield host, inventory
    host.close()


@pytest.mark.parametrize(
    "tunable",
    [
        QueueMask("rps", "eth0", "all"),
        QueueMask("xps", "eth0", (1,)),
        Sysctl("net.ipv4.ip_forward", "1"),
        Mtu("eth0", 1400),
        Offloads("eth0", {"sg": False}),
        Qdisc("eth0", ("pfifo", "limit", "500")),
    ],
    ids=lambda t: t.describe(),
)
def test_apply_read_back_and_restore(board, tunable):
    host, _ = board
    before = tunable.read(host)
    saved = apply_checked(tunable, host)
    assert saved == before
    assert tunable.is_applied(host)
    tunable.restore(host, saved)
    assert tunable.read(host) == before
    assert not tunable.is_applied(host)


def test_qdisc_goes_under_the_shaper_not_over_it(board):
    host, _ = board
    qdisc = Qdisc("eth0", ("pfifo", "limit", "500"))
    saved = apply_checked(qdisc, host)
    tree = host.check(["tc", "qdisc", "show", "dev", "eth0"])
    assert "qdisc tbf" in tree and "qdisc pfifo" in tree  # the GbE shaper stays the root
    qdisc.restore(host, saved)
    assert "pfifo" not in host.check(["tc", "qdisc", "show", "dev", "eth0"])


@pytest.mark.parametrize(
    ("tunable", "reason"),
    [
        (IrqAffinity("eth0", (1,)), "no IRQ of eth0, by name or from its device"),
        (Governor("performance"), "no cpufreq"),
        (FixedClock(1500), "no cpufreq"),
        (Qdisc("eth0", ("sfq", "quantum", "1500")), "kernel lacks sfq"),
        (QueueMask("rps", "nosuch0", "all"), "no rps_cpus queue files"),
        (Sysctl("net.ipv4.no_such_knob", "1"), "net.ipv4.no_such_knob"),
    ],
    ids=lambda x: x if isinstance(x, str) else x.describe(),
)
def test_unsupported_tunables_say_why_and_change_nothing(board, tunable, reason):
    host, _ = board
    qdiscs_before = host.check(["tc", "qdisc", "show", "dev", "eth0"])
    with pytest.raises(Unsupported) as info:
        apply_checked(tunable, host)
    assert reason in info.value.reason
    assert host.check(["tc", "qdisc", "show", "dev", "eth0"]) == qdiscs_before


def test_profile_with_one_unsupported_tunable_is_undone_completely(board):
    host, inventory = board
    link = inventory.link("eth")
    data = {"profiles": {"p": {"board": {"rps": {"link": "all"}, "irq_affinity": {"link": [1]}}}}}
    profile = profiles_from_data(data, "p.yaml")["p"]
    rps_before = QueueMask("rps", "eth0", "all").read(host)
    with pytest.raises(Unsupported, match="no IRQ of eth0"):
        apply_profile(profile, {"board": host}, link)
    assert QueueMask("rps", "eth0", "all").read(host) == rps_before


def test_routed_path_is_provisioned_and_restored(fresh_lab):
    from pytest_pinet.host.routed_path import apply_board_qdisc, provision_route

    virtual_lab.up(fresh_lab)
    inventory = load_inventory(fresh_lab.env_file)
    hosts = {name: RemoteHost(entry.endpoint) for name, entry in inventory.hosts.items()}
    (route,) = inventory.routes
    pc, pi = hosts[route.lan.peer], hosts[route.board]
    try:
        forwarding_before = pi.check(["sysctl", "-n", "net.ipv4.ip_forward"]).strip()
        assert not pc.run(["ping", "-c", "1", "-W", "1", route.wan.peer_address]).ok
        applied = provision_route(route, hosts)
        qdisc = apply_board_qdisc(route, hosts, "pfifo_fast")
        # the lan peer reaches the wan peer through the board, under the shaper's pfifo_fast
        assert pc.run(["ping", "-c", "1", "-W", "2", route.wan.peer_address]).ok
        for link in (route.lan, route.wan):
            shown = pi.check(["tc", "qdisc", "show", "dev", link.board_interface])
            assert "tbf" in shown and "pfifo_fast" in shown
        assert qdisc.restore() == [] and applied.restore() == []
        # this machine's kernel lacks sch_sfq; another CI kernel may have it
        refused = None
        try:
            sfq = apply_board_qdisc(route, hosts, "sfq")
        except Unsupported as exc:
            refused = str(exc)
        shown = pi.check(["tc", "qdisc", "show", "dev", route.lan.board_interface])
        if refused is None:
            assert "sfq" in shown
            assert sfq.restore() == []
        else:
            assert "kernel lacks sfq" in refused and "sfq" not in shown
        assert pi.check(["sysctl", "-n", "net.ipv4.ip_forward"]).strip() == forwarding_before
        assert pc.check(["ip", "route", "show", f"{route.wan.peer_address}/32"]).strip() == ""
        assert not pc.run(["ping", "-c", "1", "-W", "1", route.wan.peer_address]).ok
        assert "pfifo_fast" not in pi.check(["tc", "qdisc", "show", "dev", route.lan.board_interface])
        # The shaper got its FIFO back, not the noop qdisc deleting a child leaves: the board
        # still reaches both peers over their cables.
        for link in (route.lan, route.wan):
            assert "bfifo" in pi.check(["tc", "qdisc", "show", "dev", link.board_interface])
            assert pi.run(["ping", "-c", "1", "-W", "2", link.peer_address]).ok
    finally:
        for host in hosts.values():
            host.close()
