"""A Linux host's facts from the sections its facts script printed (ethtool, lsusb, os-release,
the image marker, the CPU and its clock); the Linux platform calls it, so no platform reaches
back into ``host.facts``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model.host_facts import HostFacts, InterfaceFacts
from ..facts_parse import (
    image_of,
    parse_cable_alias,
    parse_ethtool_features,
    parse_ethtool_info,
    parse_ethtool_rings,
    parse_ethtool_settings,
    parse_image_marker,
    parse_lsusb_tree,
    parse_os_release,
    parse_root_qdisc,
    parse_sysctls,
    parse_throttled,
    parse_usb_identity,
    parse_vc_version,
    usb_speed_of_driver,
)

# ethtool -k feature names -> the short names a measurement's context carries.
OFFLOADS = {
    "tcp-segmentation-offload": "tso",
    "generic-segmentation-offload": "gso",
    "generic-receive-offload": "gro",
    "large-receive-offload": "lro",
    "rx-checksumming": "rx-checksum",
    "tx-checksumming": "tx-checksum",
    "scatter-gather": "sg",
}


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
        # The device's own sysfs speed names this adapter; lsusb -t only the driver's (two
        # adapters with one driver at different speeds are then unknown).
        identity = parse_usb_identity(s.get(f"if-usb:{name}", ""))
        speeds = usb_speed_of_driver(usb, driver) if driver else []
        usb_speed = identity.speed_mbps if identity and identity.speed_mbps else None
        if usb_speed is None and len(set(speeds)) == 1:
            usb_speed = speeds[0]
        speed, duplex, reported_by = settings.speed_mbps, settings.duplex, ""
        cable = parse_cable_alias(s.get(f"if-alias:{name}", "")) if driver == "veth" else None
        if cable is not None:
            reported_by, speed, duplex = cable
        mtu = s.get(f"if-mtu:{name}", "")
        result[name] = InterfaceFacts(
            name=name,
            driver=driver,
            driver_version=info.get("version") or None,
            firmware=info.get("firmware-version") or None,
            bus_info=info.get("bus-info") or None,
            speed_mbps=speed,
            duplex=duplex,
            mtu=int(mtu) if mtu.isdigit() else None,
            offloads={short: features[long] for long, short in OFFLOADS.items() if long in features},
            usb_speed_mbps=usb_speed,
            carrier=settings.link_detected,
            usb_id=identity.usb_id if identity else None,
            reported_by=reported_by,
            rings=parse_ethtool_rings(s.get(f"if-rings:{name}", "")),
            qdisc=parse_root_qdisc(s.get(f"if-qdisc:{name}", "")),
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
        sysctls=parse_sysctls(s.get("sysctl", "")),
        firmware_versions={
            name: found
            for name, found in (
                ("vc-firmware", parse_vc_version(s.get("vc-firmware", ""))),
                ("bootloader", parse_vc_version(s.get("bootloader", ""))),
            )
            if found
        },
    )
