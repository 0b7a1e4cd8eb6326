"""The FreeBSD and NetBSD platforms: parsers on real outputs, facts, observers, tunables, uname.

Every file under ``fixtures/bsd`` (and ``fixtures/qnx``) is a real machine's output copied from a public source
(their ``SOURCES.md``); each test asserts values read in the file by eye.  Hostile
variants (truncated, empty, extra columns) are made from them here.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_pinet.errors import Unsupported
from pytest_pinet.host.cpu_tunables import Governor, IrqAffinity, QueueMask
from pytest_pinet.host.facts import facts_from_output
from pytest_pinet.host.net_tunables import Mtu, Offloads
from pytest_pinet.host.platform import FREEBSD, LINUX, NETBSD, QNX, platform_of_uname
from pytest_pinet.host.platform.bsd_devices import (
    offloads_of,
    parse_ifconfig,
    parse_netstat_interface,
    parse_usbconfig,
    parse_usbdevs,
    usb_speed_of_instance,
)
from pytest_pinet.host.platform.bsd_parse import (
    affinity_of_hw_intrs,
    cp_times_rows,
    envstat_temperature,
    mhz,
    os_of_uname,
    parse_cpuset_irq,
    parse_hw_intrs,
    parse_intrctl_list,
    parse_netstat_udp,
    parse_vmstat_i,
    sysctl_temperature,
)
from pytest_pinet.host.remote import CommandResult
from pytest_pinet.host.tunables import apply_checked
from pytest_pinet.traffic.observers import observe, parse_snapshot
from tests.fixture_paths import BSD_OUTPUTS, QNX_OUTPUTS


def real(name: str) -> str:
    """A recorded output: QNX's beside the BSDs' in their own folder."""
    folder = QNX_OUTPUTS if name.startswith("qnx") else BSD_OUTPUTS
    return (folder / name).read_text(encoding="utf-8")


def sysctl_n(name: str, key: str) -> str:
    """What ``sysctl -n KEY`` prints, from a real ``sysctl -a`` excerpt (either OS's style)."""
    for line in real(name).splitlines():
        found = re.match(rf"^{re.escape(key)}(?::| =) (.*)$", line)
        if found:
            return found.group(1)
    raise AssertionError(f"{key} not in {name}")


def test_every_recording_has_its_source():
    listed = set(re.findall(r"^([a-z0-9][\w.+-]*\.txt)\b", real("SOURCES.md"), re.M))
    assert {p.name for p in BSD_OUTPUTS.glob("*.txt")} == listed


# --- ifconfig ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "interface", "mtu", "speed", "ether"),
    [
        ("freebsd-ifconfig-genet0-rpi4-lowerup.txt", "genet0", 1500, 1000, "dc:a6:32:35:0a:c2"),
        ("freebsd-handbook-ifconfig-em0-lo0.txt", "em0", 1500, 1000, "00:1f:16:0f:27:5a"),
        ("freebsd-ifconfig-ix0-10GbaseSR-mtu9000.txt", "ix0", 9000, 10000, "00:1b:21:8b:f8:2c"),
        ("freebsd-ifconfig-cxl3-10GbaseLR-sfp.txt", "cxl3", 1500, 10000, "00:07:43:3d:b7:70"),
        ("freebsd-ifconfig-mce0-100GBaseSR4.txt", "mce0", 1500, 100000, "0c:42:a1:2b:03:74"),
        ("netbsd7.1-ifconfig-a-re0-ansible.txt", "re0", 1500, 100, "52:54:00:63:55:af"),
        ("netbsd-post7.1-ifconfig-a-re0-ansible.txt", "re0", 1500, 100, "52:54:00:63:55:af"),
    ],
)
def test_ifconfig_gives_mtu_speed_duplex_and_address(name, interface, mtu, speed, ether):
    seen = parse_ifconfig(real(name))[interface]
    assert (seen.mtu, seen.speed_mbps, seen.duplex, seen.ether, seen.status) == (
        mtu,
        speed,
        "full",
        ether,
        "active",
    )


def test_ifconfig_of_a_cable_less_port_has_no_speed():
    seen = parse_ifconfig(real("freebsd-handbook-ifconfig-em0-nocarrier.txt"))["em0"]
    assert (seen.speed_mbps, seen.duplex, seen.status) == (None, None, "no carrier")


def test_ifconfig_lists_loopback_beside_the_nic_and_its_offloads():
    both = parse_ifconfig(real("freebsd-handbook-ifconfig-em0-lo0.txt"))
    assert set(both) == {"em0", "lo0"} and both["lo0"].mtu == 16384
    assert offloads_of(both["em0"]) == {
        "tcp-segmentation-offload": False,
        "large-receive-offload": True,
        "rx-checksumming": True,
        "tx-checksumming": True,
    }
    # FreeBSD 14 prints the options without a mask; TSO4 is on the Mellanox card.
    assert offloads_of(parse_ifconfig(real("freebsd-ifconfig-mce0-100GBaseSR4.txt"))["mce0"])[
        "tcp-segmentation-offload"
    ]
    # NetBSD lists capabilities, and `enabled=0`: nothing is switched on.
    re0 = parse_ifconfig(real("netbsd7.1-ifconfig-a-re0-ansible.txt"))["re0"]
    assert not any(offloads_of(re0).values())


def test_ifconfig_hostile_variants():
    text = real("freebsd-ifconfig-genet0-rpi4-lowerup.txt")
    assert parse_ifconfig("") == {}
    cut = parse_ifconfig(text[: text.index("media:")])["genet0"]  # truncated before the media line
    assert (cut.mtu, cut.speed_mbps) == (1500, None)
    prompted = parse_ifconfig("root@pi:~ # ifconfig genet0\n" + text + "root@pi:~ # ")
    assert prompted["genet0"].speed_mbps == 1000 and set(prompted) == {"genet0", "lo0"}


# --- netstat -i ------------------------------------------------------------------------------


def test_netstat_link_row_under_linux_counter_names():
    em0 = parse_netstat_interface(real("freebsd12-netstat-ib-em0-vmware.txt"), "em0")
    assert em0 == {
        "rx_packets": 372717,
        "rx_errors": 0,
        "rx_dropped": 0,
        "rx_bytes": 372538087,
        "tx_packets": 213821,
        "tx_errors": 0,
        "tx_bytes": 198573339,
    }
    inter = parse_netstat_interface(real("freebsd-netstat-I-inter-nbd.txt"), "inter")
    assert (inter["rx_bytes"], inter["tx_bytes"], inter["tx_errors"], inter["tx_dropped"]) == (
        19227525718,
        17356471801,
        49,
        0,
    )


def test_netstat_hostile_variants():
    text = real("freebsd12-netstat-ib-em0-vmware.txt")
    assert parse_netstat_interface(text, "ue0") == {}
    assert parse_netstat_interface(text.splitlines()[1], "em0") == {}  # no header: no columns
    wider = text.replace(" Coll\n", " Coll  Extra\n", 1)
    assert parse_netstat_interface(wider, "em0")["tx_bytes"] == 198573339
    cut = "\n".join(line[:60] for line in text.splitlines())
    assert "tx_bytes" not in parse_netstat_interface(cut, "em0")


# --- interrupts ------------------------------------------------------------------------------


def test_vmstat_i_totals_per_source():
    table = parse_vmstat_i(real("freebsd-vmstat-i-amd64-igb-nvme-PARTIAL.txt"))
    assert table.cpus == 1
    assert table.lines["irq128"].counts == (18882,) and table.lines["irq128"].names == ("xhci0",)
    assert [line.irq for line in table.for_name("igb0")] == ["irq134", "irq135", "irq136", "irq137", "irq138"]
    assert table.lines["cpu0"].counts == (5343,)
    grepped = parse_vmstat_i(real("freebsd-vmstat-i-ixl0-rxq-lines-grep.txt"))
    assert grepped.lines["irq270"].counts == (3375400,) and len(grepped.for_name("ixl0")) == 9


def test_hw_intrs_puts_each_count_on_its_cpu():
    text = real("freebsd12-sysctl-hw.intrs-excerpt-vmware.txt")
    table = parse_hw_intrs(text, 4)
    assert table.cpus == 4
    assert table.lines["irq19"].counts == (31369, 0, 0, 0)
    assert table.for_name("em0") == [table.lines["irq19"]]
    assert table.lines["irq17"].names == ("mpt0", "ehci0")
    assert affinity_of_hw_intrs(text, "19") == "0" and affinity_of_hw_intrs(text, "irq999") == ""
    table = FREEBSD.interrupt_table("ncpu 1\n" + text)
    assert table.lines["irq18"].counts == (30871,)


def test_intrctl_list_in_the_shape_intrctl_prints():
    # intrctl(8) of NetBSD 8+ prints this layout (usr.sbin/intrctl/intrctl.c, rev 1.9): no
    # public recording of it was found, so the test builds it from that source's format.
    text = (
        "interrupt id        CPU0     CPU1  device name(s)\n"
        "ioapic0 pin 9          0*       0   acpi0\n"
        "msix0 vec 0         2193     1234*  wm0 TXRX0\n"
    )
    table, affinity = parse_intrctl_list(text)
    assert table.cpus == 2
    assert table.lines["msix0 vec 0"].counts == (2193, 1234)
    assert [line.irq for line in table.for_name("wm0")] == ["msix0 vec 0"]
    assert affinity == {"ioapic0 pin 9": "0", "msix0 vec 0": "1"}
    assert NETBSD.parse_affinity(text, "msix0 vec 0") == "1"
    assert parse_intrctl_list("")[0].lines == {} and parse_intrctl_list(text[:40])[0].lines == {}


def test_cpuset_irq_mask():
    assert parse_cpuset_irq("irq 16 mask: 0, 1, 2, 3\n") == "0,1,2,3"
    assert parse_cpuset_irq("cpuset: getaffinity: No such process") == ""


# --- CPU time, clock, temperature --------------------------------------------------------------


def test_cp_time_rows_in_proc_stat_order():
    (line,) = [
        x for x in real("freebsd12-sysctl-a-excerpt-vmware.txt").splitlines() if x.startswith("kern.cp_times")
    ]
    rows = cp_times_rows(line)
    assert cp_times_rows(sysctl_n("freebsd12-sysctl-a-excerpt-vmware.txt", "kern.cp_times")) == {
        "cpu": rows["cpu"]
    }
    # user nice sys intr idle -> user nice system idle iowait irq softirq steal
    assert rows["cpu0"] == [1306, 0, 20708, 2221637, 0, 3886, 0, 0] == rows["cpu"]
    assert cp_times_rows("kern.cp_times: 1 2 3") == {}  # not five per CPU: nothing, never zeros


def test_cp_time_deltas_give_busy_and_interrupt_shares():
    before = "10 0 20 10 60 20 0 10 0 70"  # cpu0, cpu1: user nice sys intr idle
    after = "30 0 40 30 100 20 0 10 0 170"
    snap_before = parse_snapshot(f"@@obs:stat\n{before}\n", FREEBSD, "genet0")
    snap_after = parse_snapshot(f"@@obs:stat\n{after}\n", FREEBSD, "genet0")
    observed = observe("pi", "genet0", snap_before, snap_after)
    cores = {core.cpu: core for core in observed.cpu}
    assert cores["cpu0"].busy == pytest.approx(60.0) and cores["cpu0"].irq == pytest.approx(20.0)
    assert cores["cpu1"].busy == 0.0


def test_clock_and_temperature():
    assert (
        mhz(sysctl_n("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt", "machdep.cpu.frequency.current"))
        == 600
    )
    assert sysctl_temperature(
        sysctl_n("freebsd-12.2-arm64-rpi3bplus-sysctl-excerpt.txt", "hw.cpufreq.temperature")
    ) == (pytest.approx(43.47))
    assert (
        sysctl_temperature(
            sysctl_n("freebsd-pfsense-sysctl-dev-cpu-temperature.txt", "dev.cpu.0.temperature")
        )
        == 46.0
    )
    assert envstat_temperature(real("netbsd-envstat-arm64-pinebookpro-rk3399.txt")) == pytest.approx(42.778)
    assert envstat_temperature(real("netbsd10-envstat-sparc64-netra-x1.txt")) == 37.0
    assert sysctl_temperature("") is None and mhz("unknown oid") is None and envstat_temperature("") is None


# --- USB ---------------------------------------------------------------------------------------


def test_usbconfig_speeds():
    devices = {d.name: d for d in parse_usbconfig(real("freebsd-usbconfig-list-intel-xhci.txt"))}
    assert devices["ugen0.5"].speed_mbps == 5000 and devices["ugen0.2"].speed_mbps == 1.5
    assert devices["ugen0.4"].description.startswith("3-in-1 (SD/SDHC/SDXC) Card Reader")
    pf = {d.name: d.speed_mbps for d in parse_usbconfig(real("freebsd-pfsense244-usbconfig.txt"))}
    assert pf == {"ugen0.1": 5000, "ugen1.1": 480, "ugen0.2": 12, "ugen1.2": 480, "ugen0.3": 1.5}


def test_usb_driver_lines_tie_an_adapter_to_its_speed():
    # `usbconfig show_ifdrv` adds a line per interface driver under each device (format of
    # usr.sbin/usbconfig); built on a real device line of the recordings.
    text = real("freebsd-usbconfig-list-intel-xhci.txt") + "ugen0.5.0: umass0: <JMicron JMS567>\n"
    assert usb_speed_of_instance(parse_usbconfig(text), "umass0") == 5000
    assert usb_speed_of_instance(parse_usbconfig(text), "ure0") is None
    netbsd = (
        "Controller /dev/usb0:\n"
        "addr 1: super speed, self powered, config 1, xHCI root hub(0x0000), vendor 8086(0x8086), rev 1.00\n"
        "  uhub0\n"
        " port 1 addr 2: high speed, power 100 mA, config 1, AX88179(0x1790), ASIX(0x0b95), rev 1.00\n"
        "   axen0\n"
    )
    assert usb_speed_of_instance(parse_usbdevs(netbsd), "axen0") == 480
    assert parse_usbdevs("") == [] and parse_usbconfig("usbconfig: command not found") == []


# --- UDP counters ------------------------------------------------------------------------------


def test_netstat_udp_counters_by_linux_names():
    text = "udp:\n\t2546 datagrams received\n\t45 dropped due to no socket\n\t0 dropped due to full socket buffers\n\t2489 delivered\n"
    assert parse_netstat_udp(text) == {
        "Received": 2546,
        "NoPorts": 45,
        "RcvbufErrors": 0,
        "InDatagrams": 2489,
    }
    assert parse_netstat_udp("") == {}


# --- uname: which platform, or why none -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("freebsd12-uname-a.txt", "freebsd"),
        ("freebsd10-uname-a.txt", "freebsd"),
        ("netbsd-9.1-aarch64-rpi3bplus-uname-ap.txt", "netbsd"),
        ("netbsd-9.1-earmv7hf-rpi3bplus-uname-ap.txt", "netbsd"),
        ("netbsd11-uname-a-amd64-TERMINAL-WRAPPED.txt", "netbsd"),
        ("qnx800-uname-a-rpi4.txt", "qnx"),
        ("qnx710-uname-a-rpi4.txt", "qnx"),
        ("qnx650-uname-a-omap5432-ford-sync3.txt", "qnx"),
    ],
)
def test_uname_names_the_system(name, expected):
    assert os_of_uname(real(name)) == expected


def test_every_driven_system_is_found_and_an_unknown_one_is_unsupported_with_the_reason():
    assert platform_of_uname("pi", "FreeBSD\n") is FREEBSD
    assert platform_of_uname("pi", "NetBSD\n") is NETBSD
    assert platform_of_uname("pi", "Linux\n") is LINUX
    assert platform_of_uname("pi", real("qnx800-uname-a-rpi4.txt")) is QNX
    with pytest.raises(Unsupported, match=r"`uname -s` said 'Darwin'"):
        platform_of_uname("mac", "Darwin\n")
    with pytest.raises(Unsupported, match=r"said 'nothing'"):
        platform_of_uname("mute", "")


# --- facts from a whole script's output ---------------------------------------------------------


def test_freebsd_facts_of_a_pi():
    text = "\n".join(
        [
            "@@pinet:kernel",
            "12.2-RELEASE",
            "@@pinet:arch",
            "arm64",
            "@@pinet:uname",
            "FreeBSD 12.2-RELEASE",
            "@@pinet:cpus",
            sysctl_n("freebsd-12.2-arm64-rpi3bplus-sysctl-excerpt.txt", "hw.ncpu"),
            "@@pinet:cpu-model",
            sysctl_n("freebsd-12.2-arm64-rpi3bplus-sysctl-excerpt.txt", "hw.model"),
            "@@pinet:temp",
            sysctl_n("freebsd-12.2-arm64-rpi3bplus-sysctl-excerpt.txt", "hw.cpufreq.temperature"),
            "@@pinet:usb",
            real("freebsd-usbconfig-list-intel-xhci.txt"),
            "@@pinet:if-config:genet0",
            real("freebsd-ifconfig-genet0-rpi4-lowerup.txt"),
        ]
    )
    facts = facts_from_output("pi", text, ["genet0"], FREEBSD)
    assert (facts.kernel, facts.os_id, facts.os_name, facts.os_version) == (
        "12.2-RELEASE",
        "freebsd",
        "FreeBSD 12.2-RELEASE",
        "12.2-RELEASE",
    )
    assert (facts.cpus, facts.cpu_model) == (4, "ARM Cortex-A53 r0p4")
    assert facts.temperature_c == pytest.approx(43.47)
    genet = facts.interfaces["genet0"]
    assert (genet.driver, genet.speed_mbps, genet.duplex, genet.mtu) == ("genet", 1000, "full", 1500)
    assert facts.governor is None and facts.cpu_mhz is None  # not printed: unknown, never 0


def test_netbsd_facts_without_os_release():
    text = "\n".join(
        [
            "@@pinet:kernel",
            "9.1",
            "@@pinet:uname",
            "NetBSD 9.1",
            "@@pinet:cpus",
            sysctl_n("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt", "hw.ncpu"),
            "@@pinet:model",
            sysctl_n("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt", "hw.model"),
            "@@pinet:freq",
            sysctl_n("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt", "machdep.cpu.frequency.current"),
            "@@pinet:temp",
            real("netbsd-envstat-arm64-pinebookpro-rk3399.txt"),
            "@@pinet:if-config:re0",
            real("netbsd-post7.1-ifconfig-a-re0-ansible.txt"),
        ]
    )
    facts = facts_from_output("nb", text, ["re0"], NETBSD)
    assert (facts.os_name, facts.os_id, facts.os_version, facts.model) == (
        "NetBSD 9.1",
        "netbsd",
        "9.1",
        "raspberrypi,3-model-b-plus",
    )
    assert (facts.cpus, facts.cpu_mhz) == (4, 600) and facts.temperature_c == pytest.approx(42.778)
    assert facts.interfaces["re0"].speed_mbps == 100 and facts.interfaces["re0"].driver == "re"


def test_freebsd_usb_adapter_is_found_through_its_parent():
    text = (
        "@@pinet:kernel\n14.1-RELEASE\n@@pinet:usb\n"
        + real("freebsd-usbconfig-list-intel-xhci.txt")
        + "ugen0.5.0: ure0: <Realtek USB 10/100/1G/2.5G LAN>\n"
        + "@@pinet:if-config:ue0\nue0: flags=8843<UP> metric 0 mtu 1500\n"
        + "@@pinet:if-parent:ue0\nure0\n"
    )
    ue0 = facts_from_output("pi", text, ["ue0"], FREEBSD).interfaces["ue0"]
    assert (ue0.driver, ue0.usb_speed_mbps, ue0.speed_mbps) == ("ure", 5000, None)


# --- observers: a whole snapshot ---------------------------------------------------------------


def test_freebsd_snapshot_gives_interrupts_nic_and_heat():
    intrs = real("freebsd12-sysctl-hw.intrs-excerpt-vmware.txt")
    text = (
        f"@@obs:interrupts\nncpu 2\n{intrs}\n@@obs:stat\n1 0 2 3 4 5 0 6 7 8\n"
        f"@@obs:nic\n{real('freebsd12-netstat-ib-em0-vmware.txt')}\n@@obs:temp\n46.0C\n"
    )
    snap = parse_snapshot(text, FREEBSD, "em0")
    assert snap.os == "freebsd" and snap.temperature_c == 46.0
    assert snap.nic["rx_bytes"] == 372538087
    later = parse_snapshot(text.replace("@cpu0(domain0): 31369", "@cpu0(domain0): 31469"), FREEBSD, "em0")
    assert observe("pi", "em0", snap, later).interrupts_per_cpu == {"irq19": (100, 0)}


# --- tunables ----------------------------------------------------------------------------------


def scripted(platform: Any, answers: dict[str, str] | None = None) -> Any:
    """A :class:`ScriptedHost` where a RemoteHost is expected."""
    return ScriptedHost(platform, answers)


class ScriptedHost:
    """A host that answers scripts from a table and records what it was asked."""

    name = "bsd-pi"
    sudo = False

    def __init__(self, platform, answers=None):
        self.platform = platform
        self.answers = answers or {}
        self.asked: list[str] = []

    def run_shell(self, script, *, timeout=60.0, root=False, cleanup=False):
        self.asked.append(script)
        for key, out in self.answers.items():
            if key in script:
                return CommandResult(script, 0, out, "")
        return CommandResult(script, 0, "", "")

    def run(self, argv, *, timeout=60.0, root=False, cleanup=False):
        return self.run_shell(" ".join(str(a) for a in argv), timeout=timeout, root=root)

    def check(self, argv, *, timeout=60.0, root=False):
        return self.run(argv, timeout=timeout, root=root).stdout


@pytest.mark.parametrize(
    ("tunable", "reason"),
    [
        (QueueMask("rps", "genet0", (1,)), "netisr"),
        (Governor("performance"), "powerd"),
    ],
)
def test_linux_only_tunables_are_unsupported_with_the_reason(tunable, reason):
    for platform in (FREEBSD, NETBSD):
        host = scripted(platform)
        with pytest.raises(Unsupported, match=reason):
            apply_checked(tunable, host)
        assert host.asked == []  # refused before any command ran


def test_freebsd_irq_affinity_goes_through_cpuset():
    intrs = real("freebsd12-sysctl-hw.intrs-excerpt-vmware.txt")
    host = scripted(FREEBSD, {"hw.intrs": "ncpu 2\n" + intrs})
    tunable = IrqAffinity("em0", (1,))
    assert tunable.read(host) == {"irq19": "0"}
    tunable.apply(host)
    assert "cpuset -l 1 -x 19" in host.asked[-1]


def test_bsd_mtu_and_offloads_through_ifconfig():
    genet = real("freebsd-ifconfig-genet0-rpi4-lowerup.txt")
    host = scripted(FREEBSD, {"ifconfig genet0 | sed": "1500\n", "ifconfig genet0": genet})
    assert Mtu("genet0", 1500).read(host) == 1500
    assert Offloads("genet0", {"tso": False}).read(host)["rx-checksumming"] is True
    with pytest.raises(Unsupported, match=r"freebsd cannot switch gro \(only lro, rx, tso, tx\)"):
        Offloads("genet0", {"gro": False}).apply(host)
    assert FREEBSD.offloads_write("genet0", {"tso": False, "rx": True}) == [
        "ifconfig",
        "genet0",
        "-tso",
        "rxcsum",
    ]


# --- per-OS thresholds ---------------------------------------------------------------------------


def test_udp_floors_per_os_and_method_come_from_the_shipped_thresholds():
    from pytest_pinet.judge.threshold_rules import load_thresholds
    from pytest_pinet.plugin.options import DATA

    rules = load_thresholds(DATA / "thresholds.yaml")
    link = {"protocol": "UDP", "direction": "board->peer", "link_speed_mbps": 1000, "mtu": 1500, "streams": 1}

    def rule(**context):
        found = rules.rule_for({**link, **context})
        return found.rule_id if found else None

    assert rule(os="FreeBSD 14.2-RELEASE", scenario="udp-sendto") == "udp-over-the-link-freebsd"
    assert rule(os="NetBSD 10.1", scenario="udp-sendmmsg") == "udp-over-the-link-netbsd"
    assert rule(os="Debian GNU/Linux 12 (bookworm)", scenario="udp-sendto") == "udp-over-the-link"
    assert rule(os="QNX 8.0.0", scenario="udp-sendto") == "udp-sendto-qnx"
    stalled = rules.rule_for({**link, "os": "NetBSD 10.1", "scenario": "udp-raw", "streams": 2})
    assert stalled is not None and "deadlocks in writev" in (stalled.known_slow or "")
    assert rule(os="NetBSD 10.1", scenario="udp-raw", streams=1) == "udp-over-the-link-netbsd"
