"""Put a catalogue image on a board through labgrid's drivers, and prove the board booted it.

A figure is only worth its image label if the board really ran that image.  So flashing is
half of provisioning; the other half reads back, after boot, the kernel release,
``/etc/os-release`` and the machine type, and refuses (a ``provisioning`` lab fault with both
values) a board that booted something else.  Only then is the image's marker written on the
board, which is what lets the next run skip a flash of an image the board already runs.

The drivers are labgrid's own: ``USBSDMuxDriver`` and ``USBStorageDriver.write_image`` for an
SD card (the QEMU board's card has drivers with the same methods), ``TFTPProviderDriver.stage``
for network boot.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabFault
from ..host.remote import RemoteHost
from ..model.host_facts import HostFacts
from .image_catalogue import SD_MUX_DRIVERS, SD_WRITER_DRIVERS, CatalogueImage, cache_dir, local_file

# A Pi's config.txt for a network-booted kernel (the firmware reads it from the TFTP server).
PI_NETBOOT_CONFIG = "arm_64bit=1\nkernel={kernel}\n{dtb_line}{initrd_line}"


@dataclass(frozen=True)
class Flash:
    """What one flash did, kept with the run's facts."""

    board: str
    image: str
    delivery: str
    method: str  # "dd", "bmaptool", "tftp"
    seconds: float


def mismatches(image: CatalogueImage, facts: HostFacts) -> list[str]:
    """How what booted differs from what the catalogue promises (empty: it is the image)."""
    found = []
    if not image.kernel_matches(facts.kernel):
        found.append(f"kernel {facts.kernel or '?'} (catalogue: {image.kernel})")
    if (facts.os_id, facts.os_version) != (image.os_id, image.os_version):
        found.append(
            f"os {facts.os_id or '?'} {facts.os_version or '?'} (catalogue: {image.os_id} {image.os_version})"
        )
    if image.arch and facts.arch and facts.arch != image.arch:
        found.append(f"arch {facts.arch} (catalogue: {image.arch})")
    return found


def verify(board: str, image: CatalogueImage, facts: HostFacts) -> None:
    """Raise a ``provisioning`` lab fault unless ``facts`` show ``image`` booted."""
    wrong = mismatches(image, facts)
    if wrong:
        raise LabFault(
            "provisioning",
            f"{board} was given image {image.name} but booted {'; '.join(wrong)}: no measurement "
            "runs under the wrong image (check the image file, the card or the boot configuration)",
            host=board,
        )


def already_runs(image: CatalogueImage, facts: HostFacts) -> bool:
    """True when the board's marker says pinet verified ``image`` (the same bytes) on it and
    it still runs the kernel it was verified with, which still matches the catalogue."""
    marker = facts.image_marker
    return (
        facts.image == image.name
        and marker.get("identity") == image.identity
        and not mismatches(image, facts)
    )


def write_marker(remote: RemoteHost, image: CatalogueImage, facts: HostFacts) -> None:
    """Record on the board that ``image`` was verified there, with the kernel it showed."""
    value = json.dumps(
        {
            "name": image.name,
            "identity": image.identity,
            "kernel": facts.kernel,
            "verified": int(time.time()),
        },
        sort_keys=True,
    )
    result = remote.run_shell(remote.platform.image_marker_script(value, remote.sudo), timeout=20)
    if not result.ok:
        raise LabFault(
            "provisioning", f"{remote.name}: cannot write the image marker: {result.stderr.strip()}"
        )


def _driver(target: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        try:
            return target.get_driver(name, activate=False)
        except Exception:  # noqa: BLE001, S112 - labgrid: NoDriverFoundError, or an unknown class name
            continue
    return None


def flash(target: Any, image: CatalogueImage) -> Flash:
    """Write ``image`` for the board of ``target``, which must be off."""
    started = time.monotonic()
    if image.delivery == "sd-card":
        method = _flash_sd_card(target, image)
    elif image.delivery == "netboot":
        method = _stage_netboot(target, image)
    else:  # the catalogue refuses other deliveries
        raise LabFault("provisioning", f"image {image.name}: unknown delivery {image.delivery}")
    return Flash(target.name, image.name, image.delivery, method, time.monotonic() - started)


def _flash_sd_card(target: Any, image: CatalogueImage) -> str:
    from labgrid.driver.usbstoragedriver import Mode

    mux = _driver(target, SD_MUX_DRIVERS)
    writer = _driver(target, SD_WRITER_DRIVERS)
    if mux is None or writer is None:
        raise LabFault(
            "provisioning",
            f"{target.name} cannot take sd-card image {image.name}: its target needs an SD mux "
            f"({' or '.join(SD_MUX_DRIVERS)}) and a writer ({' or '.join(SD_WRITER_DRIVERS)})",
        )
    source = local_file(image)
    with tempfile.TemporaryDirectory(prefix="pinet-flash-") as staging:
        if image.bmap is not None and Path(f"{source}.bmap") != image.bmap:
            # labgrid finds a block map as IMAGE.bmap: give it one there.
            linked = Path(staging) / source.name
            os.symlink(source.resolve(), linked)
            os.symlink(image.bmap.resolve(), f"{linked}.bmap")
            source = linked
        has_bmap = Path(f"{source}.bmap").exists()
        use_bmap = image.write == "bmaptool" or (image.write == "auto" and has_bmap)
        try:
            target.activate(mux)
            mux.set_mode("host")
            target.activate(writer)
            writer.write_image(filename=str(source), mode=Mode.BMAPTOOL if use_bmap else Mode.DD)
        except LabFault:
            raise
        except Exception as exc:  # labgrid's ExecutionError, a failing dd or bmaptool
            raise LabFault(
                "provisioning", f"{target.name}: writing {image.name} to the SD card failed: {exc}"
            ) from exc
        finally:
            try:
                mux.set_mode("dut")
            except Exception:  # noqa: BLE001, S110 - the write's error matters more; a stuck mux shows at boot
                pass
    return "bmaptool" if use_bmap else "dd"


def _stage_netboot(target: Any, image: CatalogueImage) -> str:
    netboot = image.netboot
    assert netboot is not None
    try:
        tftp = target.get_driver("TFTPProviderDriver")
    except Exception as exc:
        raise LabFault(
            "provisioning",
            f"{target.name} cannot take netboot image {image.name}: its target needs a TFTPProvider "
            f"and a TFTPProviderDriver ({exc})",
        ) from exc
    staged = {}
    for key, path in (("kernel", netboot.kernel), ("dtb", netboot.dtb), ("initrd", netboot.initrd)):
        if path is None:
            continue
        if not path.exists():
            raise LabFault("provisioning", f"image {image.name}: netboot {key} {path} does not exist")
        staged[key] = Path(tftp.stage(str(path))).name
    config = netboot.config or PI_NETBOOT_CONFIG
    text = config.format(
        kernel=staged["kernel"],
        dtb=staged.get("dtb", ""),
        initrd=staged.get("initrd", ""),
        dtb_line=f"device_tree={staged['dtb']}\n" if "dtb" in staged else "",
        initrd_line=f"initramfs {staged['initrd']} followkernel\n" if "initrd" in staged else "",
    )
    # A Pi looks for config.txt in the TFTP root when its serial-number directory is absent;
    # the provider's stage() links every file into its root, so one netbooting Pi per
    # provider, and the file it links to must outlive this call.
    boot_config = cache_dir().parent / "netboot" / target.name / "config.txt"
    boot_config.parent.mkdir(parents=True, exist_ok=True)
    boot_config.write_text(text, encoding="utf-8")
    tftp.stage(str(boot_config))
    return "tftp"
