"""The BSD facts the health check reads, on real outputs (fixtures/bsd, each with its source in
SOURCES.md): both sysctl forms, clock levels, the CPU of a NetBSD ARM board, a one-CPU FreeBSD
host's per-CPU times, freebsd-version -kru, pciconf -lv and a USB 3 controller with no driver."""

from __future__ import annotations

import dataclasses
import re

import pytest

from pytest_pinet.host.facts import facts_from_output
from pytest_pinet.host.platform import FREEBSD, NETBSD
from pytest_pinet.host.platform.bsd_devices import (
    parse_pciconf,
    parse_usbdevs,
    undriven_xhci,
    usb_id_of_instance,
)
from pytest_pinet.host.platform.bsd_parse import (
    cpu_model_of,
    freq_levels,
    mhz,
    parse_freebsd_version,
    sysctl_lines,
    sysctl_temperature,
    sysctl_value,
)
from pytest_pinet.lab.health import FAULT, OK, board_findings, link_findings
from pytest_pinet.lab.health_table import load_health_table
from pytest_pinet.model.lab import LinkEntry
from tests.fixture_paths import BSD_OUTPUTS

TABLE = load_health_table([])


def real(name: str) -> str:
    return (BSD_OUTPUTS / name).read_text(encoding="utf-8")


def test_both_sysctl_forms_give_the_value() -> None:
    netbsd = sysctl_lines(real("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt"))  # name = value
    freebsd = sysctl_lines(real("freebsd-12.2-arm64-rpi3bplus-sysctl-excerpt.txt"))  # name: value
    assert (netbsd["hw.ncpu"], netbsd["hw.model"], netbsd["machdep.cpu.frequency.current"]) == (
        "4",
        "raspberrypi,3-model-b-plus",
        "600",
    )
    assert (freebsd["hw.ncpu"], freebsd["hw.model"], freebsd["hw.cpufreq.temperature"]) == (
        "4",
        "ARM Cortex-A53 r0p4",
        "43470",
    )
    # A whole line in either form, or sysctl -n's bare value, reads the same.
    line = next(
        x for x in real("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt").splitlines() if "current" in x
    )
    assert line == "machdep.cpu.frequency.current = 600"
    assert mhz(line) == mhz("600") == 600
    assert sysctl_value("kern.ostype: FreeBSD") == sysctl_value("kern.ostype = FreeBSD") == "FreeBSD"
    assert sysctl_value("45.0C") == "45.0C"  # a bare value with a dot is no name
    pfsense = sysctl_lines(real("freebsd-pfsense232-sysctl-dev.cpu.0-temperature-freq_levels.txt"))
    assert sysctl_temperature("dev.cpu.0.temperature: " + pfsense["dev.cpu.0.temperature"]) == 57.0
    assert mhz("dev.cpu.0.freq: " + pfsense["dev.cpu.0.freq"]) == 1000


def test_clock_levels_from_freq_levels() -> None:
    turbo = sysctl_lines(real("freebsd-sysctl-dev.cpu.0-freq_levels-turbo.txt"))
    levels = freq_levels("dev.cpu.0.freq_levels: " + turbo["dev.cpu.0.freq_levels"])
    assert levels == [2501, 2500, 2200, 2000, 1800, 1600, 1400, 1200, 1000, 800]
    assert freq_levels(turbo["dev.cpu.0.freq_levels"]) == levels  # sysctl -n
    pfsense = sysctl_lines(real("freebsd-pfsense232-sysctl-dev.cpu.0-temperature-freq_levels.txt"))
    assert freq_levels(pfsense["dev.cpu.0.freq_levels"]) == [1000, 875, 750, 625, 500, 375, 250, 125]
    assert freq_levels("") == [] and freq_levels("unknown oid 'dev.cpu.0.freq_levels'") == []
    # A host that prints the levels but no current clock is unknown, unless it has one level only.
    facts = facts_from_output(
        "pc",
        "@@pinet:kernel\n14.1-RELEASE\n@@pinet:freq-levels\n" + turbo["dev.cpu.0.freq_levels"] + "\n",
        [],
        FREEBSD,
    )
    assert facts.cpu_mhz is None
    fixed = facts_from_output(
        "pc", "@@pinet:kernel\n14.1-RELEASE\n@@pinet:freq-levels\n1500/-1\n", [], FREEBSD
    )
    assert fixed.cpu_mhz == 1500
    clocked = facts_from_output(
        "pc", f"@@pinet:kernel\n14.1-RELEASE\n@@pinet:freq\n{turbo['dev.cpu.0.freq']}\n", [], FREEBSD
    )
    assert clocked.cpu_mhz == 800


def test_netbsd_arm_board_names_its_cpu_not_the_board() -> None:
    dmesg = real("netbsd-9.1-aarch64-rpi3bplus-dmesg-EXCERPT.txt")
    grep = next(
        line for line in dmesg.splitlines() if "cpu0 at " in line
    )  # what the facts script's grep prints
    assert cpu_model_of(grep) == cpu_model_of(dmesg) == "Cortex-A53 r0p4"
    text = "\n".join(
        [
            "@@pinet:kernel",
            "9.1",
            "@@pinet:model",
            sysctl_lines(real("netbsd-9.1-aarch64-rpi3bplus-sysctl-excerpt.txt"))["hw.model"],
            "@@pinet:cpu-model",
            grep,
        ]
    )
    facts = facts_from_output("nb", text, [], NETBSD)
    assert (facts.model, facts.cpu_model) == ("raspberrypi,3-model-b-plus", "Cortex-A53 r0p4")
    # x86 and FreeBSD arm64 name it in a sysctl.
    assert cpu_model_of("ARM Cortex-A53 r0p4") == "ARM Cortex-A53 r0p4"
    assert "--" not in NETBSD.facts_script([]).split("cpu-model", 1)[1].split("@@pinet:freq", 1)[0]


def test_one_cpu_freebsd_host_has_its_cpu0_row() -> None:
    # A VMware guest with one vCPU: `sysctl -n kern.cp_times` prints five numbers.
    value = sysctl_lines(real("freebsd12-sysctl-a-excerpt-vmware.txt"))["kern.cp_times"]
    assert value == "1306 0 20708 3886 2221637"
    rows = FREEBSD.cpu_rows(value)
    assert rows["cpu0"] == rows["cpu"] == [1306, 0, 20708, 2221637, 0, 3886, 0, 0]
    assert "cpu0" not in NETBSD.cpu_rows("user = 1306, nice = 0, sys = 20708, intr = 3886, idle = 2221637")


@pytest.mark.parametrize(
    ("name", "kernel", "userland"),
    [
        ("freebsd-14.3-version-kru-userland-patched.txt", "14.3-RELEASE-p3", "14.3-RELEASE-p4"),
        ("freebsd-14.2-version-kru-userland-patched.txt", "14.2-RELEASE-p1", "14.2-RELEASE-p2"),
    ],
)
def test_freebsd_version_kru(name: str, kernel: str, userland: str) -> None:
    versions = parse_freebsd_version(real(name))  # the prompt line is skipped
    assert versions is not None
    assert (versions.installed_kernel, versions.running_kernel, versions.userland) == (
        kernel,
        kernel,
        userland,
    )
    assert not versions.reboot_pending
    text = f"@@pinet:kernel\n{kernel}\n@@pinet:uname\nFreeBSD {kernel}\n@@pinet:freebsd-version\n{real(name)}"
    facts = facts_from_output("pc", text, [], FREEBSD)
    # uname -r is the running kernel; the OS version is the userland's, a patch level ahead.
    assert (facts.kernel, facts.kernel_installed, facts.os_version) == (kernel, kernel, userland)
    assert {f.verdict for f in board_findings("pc", facts, TABLE, None) if f.check == "kernel"} == {OK}
    assert parse_freebsd_version("freebsd-version: not found") is None


def test_installed_kernel_not_yet_booted_is_cured_by_a_power_cycle() -> None:
    # The rule on the same real facts, with a newer kernel installed than runs (no public output
    # of that case was found: the line is the documented -k of freebsd-version(1)).
    text = real("freebsd-14.2-version-kru-userland-patched.txt")
    facts = facts_from_output(
        "pc", f"@@pinet:kernel\n14.2-RELEASE-p1\n@@pinet:freebsd-version\n{text}", [], FREEBSD
    )
    pending = dataclasses.replace(facts, kernel_installed="14.2-RELEASE-p2")
    (finding,) = [f for f in board_findings("pc", pending, TABLE, None) if f.check == "kernel"]
    assert (finding.expected, finding.found, finding.verdict) == (
        "14.2-RELEASE-p2 (installed)",
        "14.2-RELEASE-p1",
        FAULT,
    )
    assert finding.category == "kernel-pending" and finding.cures == ("power-cycle",)


def test_pciconf_lv_names_the_nic_chip_and_each_driver() -> None:
    devices = {d.name: d for d in parse_pciconf(real("freebsd-pciconf-lv-celeron-j3160-xhci-re0.txt"))}
    assert len(devices) == 12
    re0 = devices["re0"]
    assert (re0.selector, re0.class_code, re0.vendor_id, re0.device_id, re0.driver) == (
        "pci0:2:0:0",
        "0x020000",
        "0x10ec",
        "0x8168",
        "re",
    )
    assert re0.device == "RTL8111/8168/8411 PCI Express Gigabit Ethernet Controller"
    assert devices["xhci0"].subclass == "USB" and devices["xhci0"].driver == "xhci"
    assert devices["none0"].driver is None and devices["none0"].device.endswith("Trusted Execution Engine")
    assert undriven_xhci(list(devices.values())) == ()  # the USB 3 controller has its driver
    old = {d.name: d for d in parse_pciconf(real("freebsd-pciconf-l-old-chip-card-format-EXCERPT.txt"))}
    assert (old["em0"].vendor_id, old["em0"].device_id, old["em0"].vendor) == ("0x8086", "0x1502", "")
    assert len(old) == 10 and old["none0"].driver is None


def test_usb3_controller_without_driver_explains_a_usb_speed_fault() -> None:
    vl805 = real("freebsd-pciconf-lv-vl805-xhci-no-driver-GUIDE.txt")
    (device,) = parse_pciconf(vl805)
    assert (device.vendor_id, device.device_id, device.driver) == ("0x1106", "0x3483", None)
    text = (
        "@@pinet:kernel\n14.1-RELEASE\n@@pinet:pci\n"
        + vl805
        + "@@pinet:if-config:ue0\n"
        + "ue0: flags=8843<UP> metric 0 mtu 1500\n\tmedia: Ethernet autoselect (1000baseT <full-duplex>)\n"
        + "\tstatus: active\n@@pinet:if-parent:ue0\nure0\n"
    )
    facts = facts_from_output("pi4", text, ["ue0"], FREEBSD)
    assert facts.undriven_usb3 == (
        "VIA Technologies, Inc. VL805/806 xHCI USB 3.0 Controller (none0@pci0:1:0:0)",
    )
    ue0 = facts.interfaces["ue0"]
    assert (ue0.driver, ue0.carrier, ue0.speed_mbps, ue0.usb_speed_mbps) == ("ure", True, 1000, None)
    link = LinkEntry("usb", "pi4", "ue0", "a", "pc", "em0", "b", "rtl8153", 1000, 1500)
    findings = {f.check: f for f in link_findings(link, facts, None, TABLE, "freebsd")}
    assert findings["ue0 driver"].verdict == OK  # ure drives an RTL8153 on FreeBSD
    usb = findings["ue0 USB bus"]
    assert usb.verdict == FAULT and usb.category == "usb-speed"
    assert usb.found == "not reported; no driver for " + facts.undriven_usb3[0]


def test_bsd_carrier_from_ifconfig_status() -> None:
    down = facts_from_output(
        "pc",
        "@@pinet:kernel\n14.1\n@@pinet:if-config:em0\n" + real("freebsd-handbook-ifconfig-em0-nocarrier.txt"),
        ["em0"],
        FREEBSD,
    ).interfaces["em0"]
    up = facts_from_output(
        "pi",
        "@@pinet:kernel\n14.1\n@@pinet:if-config:genet0\n" + real("freebsd-ifconfig-genet0-rpi4-lowerup.txt"),
        ["genet0"],
        FREEBSD,
    ).interfaces["genet0"]
    assert (down.carrier, up.carrier) == (False, True)
    link = LinkEntry("eth", "pc", "em0", "a", "pi", "genet0", "b", "builtin", 1000, 1500)
    found = {f.check: f for f in link_findings(link, None, None, TABLE, "freebsd") if f.host == "pc"}
    assert found["facts"].verdict == FAULT  # the host did not answer


def test_netbsd_usbdevs_names_the_adapter_ids() -> None:
    # The device line as NetBSD's usbdevs -dv prints it (product(0x....), vendor(0x....)); the
    # IDs are those the dmesg excerpt's mue0 reports (0424:7800).
    dmesg = real("netbsd-9.1-aarch64-rpi3bplus-dmesg-EXCERPT.txt")
    assert re.search(r"mue0: vendor 0424 \(0x424\) product 7800 \(0x7800\)", dmesg)
    text = (
        "Controller /dev/usb0:\n"
        " port 1 addr 7: high speed, self powered, config 1, product 7800(0x7800), vendor 0424(0x0424), rev 3.00\n"
        "   mue0\n"
    )
    assert usb_id_of_instance(parse_usbdevs(text), "mue0") == "0424:7800"
    assert TABLE.adapters["lan7800"].usb_ids == ("0424:7800",)
