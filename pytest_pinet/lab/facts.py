"""Facts about a host, gathered once per host per session in a single SSH round trip.

A figure means little without its context: the same board measures differently on another
kernel, with another adapter firmware, at another clock or while throttling.  These facts go
into every measurement's context, the results files and the reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ..errors import LabFault
from ..model.facts import HostFacts, InterfaceFacts
from .facts_parse import (
    parse_ethtool_features,
    parse_ethtool_info,
    parse_ethtool_settings,
    parse_lsusb_tree,
    parse_os_release,
    parse_throttled,
    usb_speed_of_driver,
)
from .platform import FACTS_MARK, LINUX, Platform
from .remote import RemoteHost

MARK = FACTS_MARK
OFFLOADS = {
    "tcp-segmentation-offload": "tso",
    "generic-segmentation-offload": "gso",
    "generic-receive-offload": "gro",
    "large-receive-offload": "lro",
    "rx-checksumming": "rx-checksum",
    "tx-checksumming": "tx-checksum",
    "scatter-gather": "sg",
}


def facts_script(interfaces: list[str], platform: Platform = LINUX) -> str:
    """One shell script printing every fact behind a section marker (tolerant of absence)."""
    return platform.facts_script(interfaces)


def split_sections(text: str) -> dict[str, str]:
    """Section name -> text, from the marked output of :func:`facts_script`."""
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(MARK):
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = line[len(MARK) :].strip(), []
        else:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return sections


def facts_from_output(host: str, text: str, interfaces: list[str], platform: Platform = LINUX) -> HostFacts:
    """Build :class:`HostFacts` from the script's output (``platform`` reads its sections)."""
    s = split_sections(text)
    if "kernel" not in s:
        raise LabFault("facts", f"{host}: facts script printed nothing recognisable")
    return platform.facts_from_sections(host, s, interfaces)


def linux_facts(host: str, s: Mapping[str, str], interfaces: Sequence[str]) -> HostFacts:
    """A Linux host's facts from the sections of its facts script."""
    os_release = parse_os_release(s.get("os", ""))
    usb = parse_lsusb_tree(s.get("lsusb", ""))
    throttled: tuple[str, ...] | None = None
    if s.get("throttled"):
        try:
            throttled = tuple(parse_throttled(s["throttled"])[1])
        except ValueError:
            throttled = None
    result = {}
    for name in interfaces:
        info = parse_ethtool_info(s.get(f"if-info:{name}", "")).get("", {})
        settings = parse_ethtool_settings(s.get(f"if-settings:{name}", ""))
        features = parse_ethtool_features(s.get(f"if-features:{name}", ""))
        driver = info.get("driver") or None
        speeds = usb_speed_of_driver(usb, driver) if driver else []
        mtu = s.get(f"if-mtu:{name}", "")
        result[name] = InterfaceFacts(
            name=name,
            driver=driver,
            driver_version=info.get("version") or None,
            firmware=info.get("firmware-version") or None,
            bus_info=info.get("bus-info") or None,
            speed_mbps=settings.speed_mbps,
            duplex=settings.duplex,
            mtu=int(mtu) if mtu.isdigit() else None,
            offloads={short: features[long] for long, short in OFFLOADS.items() if long in features},
            usb_speed_mbps=speeds[0] if len(set(speeds)) == 1 else None,
        )
    marker = parse_image_marker(s.get("image", ""))
    temp = s.get("temp", "")
    freq = s.get("freq", "")
    cpus = s.get("cpus", "")
    return HostFacts(
        host=host,
        kernel=s.get("kernel", ""),
        os_name=os_release.get("PRETTY_NAME", ""),
        os_id=os_release.get("ID", ""),
        os_version=os_release.get("VERSION_ID", ""),
        model=s.get("model", "").strip(),
        cpus=int(cpus) if cpus.isdigit() else 0,
        governor=s.get("governor") or None,
        cpu_mhz=int(freq) / 1000 if freq.isdigit() else None,
        temperature_c=int(temp) / 1000 if temp.lstrip("-").isdigit() else None,
        throttled=throttled,
        iperf3_version=s.get("iperf3") or None,
        interfaces=result,
        arch=s.get("arch", "").strip(),
        image=image_of(marker, s.get("kernel", "")),
        image_marker=marker,
        cpu_model=next(iter(s.get("cpu-model", "").splitlines()), "").strip(),
    )


def parse_image_marker(text: str) -> dict[str, str]:
    """The board's image marker (one JSON object); {} when absent or unreadable."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def image_of(marker: dict[str, str], kernel: str) -> str:
    """The verified image's name, if the board still runs the kernel it was verified with."""
    return marker.get("name", "") if marker.get("kernel") == kernel and kernel else ""


def gather_facts(host: RemoteHost, interfaces: list[str]) -> HostFacts:
    """Gather facts of ``host`` and the given interfaces in one SSH command."""
    out = host.run_shell(facts_script(interfaces, host.platform), timeout=30)
    return facts_from_output(host.name, out.stdout, interfaces, host.platform)
