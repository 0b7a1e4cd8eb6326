"""The lab's image catalogue: which OS images its boards can be flashed with, and what each
must show once booted.

A kernel or an OS release becomes a test axis only when the run can put it on a board and
prove it is there.  The catalogue (``pinet: images:`` in the env file) names each image, the
OS and kernel release booting it must show, where the image file is and how a board gets it:

- ``sd-card``: written to the board's SD card on the lab host, through a USB-SD-Mux (labgrid's
  ``USBSDMuxDriver`` and ``USBStorageDriver``; the QEMU board's card has drivers of the same
  methods), with bmaptool when the image has a block map;
- ``netboot``: kernel, device tree and initrd staged through labgrid's TFTP provider, the
  board's boot configuration written beside them.

See docs/images-and-kernels.md for the format.
"""

from __future__ import annotations

import fnmatch
import hashlib
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LabFault
from ..model.board_models import BOARD_MODELS

if TYPE_CHECKING:  # the schema is imported when a file is read, not with this module
    from .image_catalogue_schema import ImageSchema, NetbootSchema

# labgrid driver names that switch a card between lab host and board, and that write it.
SD_MUX_DRIVERS = ("USBSDMuxDriver", "USBSDWireDriver", "PinetSDMuxDriver")
SD_WRITER_DRIVERS = ("USBStorageDriver", "PinetSDCardDriver")
TFTP_RESOURCES = ("TFTPProvider", "RemoteTFTPProvider")


@dataclass(frozen=True)
class Netboot:
    """Files a network-booting board fetches over TFTP, and its boot configuration."""

    kernel: Path
    dtb: Path | None = None
    initrd: Path | None = None
    # The board's boot configuration (a Pi's config.txt), with {kernel}, {dtb} and {initrd}
    # filled with the staged names; None writes a Pi's.
    config: str | None = None


@dataclass(frozen=True)
class CatalogueImage:
    """One image of the catalogue."""

    name: str
    os_id: str
    os_version: str
    kernel: str  # the release `uname -r` must show; may be a pattern (fnmatch)
    delivery: str
    path: Path | None = None
    url: str | None = None
    sha256: str | None = None
    bmap: Path | None = None
    arch: str | None = None  # `uname -m` must show it, when given
    netboot: Netboot | None = None
    write: str = "auto"  # sd-card: "dd", "bmaptool", or "auto" (bmaptool when a bmap exists)
    # ``kernel: {"Pi 4B": ..., "Pi 5": ...}``: one image whose bootloader starts another kernel
    # per board model (Raspberry Pi OS: -rpi-v8, -rpi-2712); empty when one kernel fits all.
    kernel_by_model: tuple[tuple[str, str], ...] = ()

    def kernel_matches(self, release: str) -> bool:
        """True when ``release`` is the kernel this image promises (any model's, before
        :meth:`for_model` picked the board's)."""
        patterns = [kernel for _, kernel in self.kernel_by_model] or [self.kernel]
        return any(release == p or fnmatch.fnmatchcase(release, p) for p in patterns)

    def for_model(self, model: str, board: str, where: str) -> CatalogueImage:
        """This image as a board of ``model`` boots it: with that model's kernel (``where``:
        the env file, for the error)."""
        if not self.kernel_by_model:
            return self
        kernels = dict(self.kernel_by_model)
        flavour = BOARD_MODELS.get(model, "")
        kernel = kernels.get(model) or (kernels.get(flavour) if flavour else None)
        if kernel is None:
            fix = (
                f'give the image a kernel for it: kernel: {{"{model}": "...", ...}}'
                + (f' (or for every {flavour} board: "{flavour}": "...")' if flavour else "")
                if model
                else f"give {board} a model in pinet.hosts ({', '.join(sorted(kernels))} have kernels here)"
            )
            raise ConfigError(
                where,
                f"pinet.images[{self.name}].kernel names a kernel for {sorted(kernels)}, and board {board} "
                f"is {'a ' + model if model else 'of no model'}",
                fix,
            )
        return replace(self, kernel=kernel, kernel_by_model=())

    @property
    def identity(self) -> str:
        """What says two flashes wrote the same bytes: the sha256, else the name."""
        return self.sha256 or f"name:{self.name}"

    def describe(self) -> str:
        """One line for lab check and reports."""
        where = self.url or (
            str(self.path) if self.path else str(self.netboot.kernel if self.netboot else "?")
        )
        return (
            f"{self.name}: {self.os_id} {self.os_version}, kernel {self.kernel}, {self.delivery} from {where}"
        )


@dataclass(frozen=True)
class Catalogue:
    """Every image of the lab, and which deliveries each board's target can take."""

    images: tuple[CatalogueImage, ...] = ()
    deliveries: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def get(self, name: str, source: str) -> CatalogueImage:
        """The image called ``name``, or a ConfigError naming the catalogue's images."""
        for image in self.images:
            if image.name == name:
                return image
        known = ", ".join(i.name for i in self.images) or "none (the lab has no pinet.images)"
        raise ConfigError(source, f"no image {name!r} in the catalogue", f"images: {known}")

    def can_take(self, board: str, image: CatalogueImage) -> bool:
        """True when ``board``'s labgrid target has the drivers ``image``'s delivery needs."""
        return image.delivery in self.deliveries.get(board, frozenset())


def deliveries_of(target: Any) -> frozenset[str]:
    """How a labgrid target (its env file entry) can be given an image."""
    if not isinstance(target, Mapping):
        return frozenset()
    drivers = set(_names(target.get("drivers")))
    resources = set(_names(target.get("resources")))
    found = set()
    if drivers & set(SD_MUX_DRIVERS) and drivers & set(SD_WRITER_DRIVERS):
        found.add("sd-card")
    if resources & set(TFTP_RESOURCES) and "TFTPProviderDriver" in drivers:
        found.add("netboot")
    return frozenset(found)


def _names(section: Any) -> list[str]:
    """Class names of a target's resources or drivers (a mapping, or labgrid's list form)."""
    if isinstance(section, Mapping):
        return [str(k) for k in section]
    if isinstance(section, list):
        return [str(k) for item in section if isinstance(item, Mapping) for k in item]
    return []


def catalogue_from_data(raw: Any, targets: Mapping[str, Any], boards: list[str], source: Path) -> Catalogue:
    """Validate ``pinet.images``; every error names the file, the key and the fix."""
    where = str(source)
    deliveries = {board: deliveries_of(targets.get(board)) for board in boards}
    if raw is None:
        return Catalogue((), deliveries)
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never loads a lab anything at plugin import (issue 27).
    from .image_catalogue_schema import read_images

    entries = read_images(raw, where)
    images = tuple(
        _image(entry, f"pinet.images[{n}] ({entry.name})", source) for n, entry in enumerate(entries)
    )
    names = [i.name for i in images]
    if len(set(names)) != len(names):
        raise ConfigError(where, "pinet.images: image names must be unique")
    return Catalogue(images, deliveries)


def _image(entry: ImageSchema, key: str, source: Path) -> CatalogueImage:
    """One checked entry as a catalogue image, once its keys agree with each other."""
    where = str(source)
    if entry.url is not None and entry.path is not None:
        raise ConfigError(where, f"{key}: both a url and a path", "give one of them")
    if entry.url is not None and entry.sha256 is None:
        raise ConfigError(
            where, f"{key}.url needs a sha256", "a downloaded image is only trusted by its hash"
        )
    if entry.delivery == "sd-card" and entry.path is None and entry.url is None:
        raise ConfigError(where, f"{key}: an sd-card image needs a path or a url")
    if entry.delivery == "netboot" and entry.netboot is None:
        raise ConfigError(
            where, f"{key}: a netboot image needs netboot: {{kernel: ..., dtb: ..., initrd: ...}}"
        )
    # An sd-card image's netboot files are checked like any key but never staged.
    netboot = entry.netboot if entry.delivery == "netboot" else None
    return CatalogueImage(
        name=entry.name,
        os_id=entry.os.id,
        os_version=entry.os.version,
        kernel=_kernel_text(entry.kernel),
        delivery=entry.delivery,
        path=_file(entry.path, source),
        url=entry.url,
        sha256=entry.sha256,
        bmap=_file(entry.bmap, source),
        arch=entry.arch or None,
        netboot=_netboot(netboot, source) if netboot is not None else None,
        write=entry.write,
        kernel_by_model=tuple(entry.kernel.items()) if isinstance(entry.kernel, Mapping) else (),
    )


def _kernel_text(kernel: str | Mapping[str, str]) -> str:
    """The kernel as one line: the pattern, or every model's (``Pi 4B: ..., Pi 5: ...``)."""
    if isinstance(kernel, str):
        return kernel
    return ", ".join(f"{model}: {pattern}" for model, pattern in kernel.items())


def _netboot(netboot: NetbootSchema, source: Path) -> Netboot:
    return Netboot(
        _resolve(netboot.kernel, source),
        _file(netboot.dtb, source),
        _file(netboot.initrd, source),
        netboot.config or None,
    )


def _file(value: str | None, source: Path) -> Path | None:
    return None if value is None else _resolve(value, source)


def _resolve(value: str, source: Path) -> Path:
    """A file the env file names, relative to the env file."""
    path = Path(value)
    return path if path.is_absolute() else (source.parent / path)


def problems(image: CatalogueImage) -> list[str]:
    """What keeps ``image`` from being flashed now (a missing file), for lab check."""
    found = []
    files = [image.path, image.bmap]
    if image.netboot is not None:
        files += [image.netboot.kernel, image.netboot.dtb, image.netboot.initrd]
    for path in files:
        if path is not None and not path.exists():
            found.append(f"{path} does not exist")
    return found


def cache_dir() -> Path:
    """Where downloaded images are kept, by their sha256."""
    return Path.home() / ".cache" / "pinet" / "images"


_CHECKED: dict[tuple[str, int, int], str] = {}


def _check_sha256(image: CatalogueImage, path: Path) -> None:
    """Hash ``path`` once per content (size and mtime) and compare with the catalogue."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _CHECKED:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _CHECKED[key] = digest.hexdigest()
    if _CHECKED[key] != image.sha256:
        raise LabFault(
            "provisioning",
            f"image {image.name}: {path} has sha256 {_CHECKED[key]}, the catalogue says {image.sha256}",
        )


def local_file(image: CatalogueImage) -> Path:
    """The image as a local file: its path, or its URL downloaded once and checked by sha256.

    A path with a sha256 is checked too: a card written with other bytes than the catalogue
    promises would make every figure of the run about the wrong image.
    """
    if image.path is not None:
        if not image.path.exists():
            raise LabFault("provisioning", f"image {image.name}: {image.path} does not exist")
        if image.sha256 is not None:
            _check_sha256(image, image.path)
        return image.path
    assert image.url is not None
    assert image.sha256 is not None
    target = cache_dir() / image.sha256 / (Path(urllib.parse.urlparse(image.url).path).name or "image")
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as part:
        try:
            with urllib.request.urlopen(image.url, timeout=60) as response:  # noqa: S310 - scheme checked
                for block in iter(lambda: response.read(1 << 20), b""):
                    digest.update(block)
                    part.write(block)
        except OSError as exc:
            Path(part.name).unlink(missing_ok=True)
            raise LabFault("provisioning", f"image {image.name}: cannot download {image.url}: {exc}") from exc
    if digest.hexdigest() != image.sha256:
        Path(part.name).unlink(missing_ok=True)
        raise LabFault(
            "provisioning",
            f"image {image.name}: {image.url} has sha256 {digest.hexdigest()}, "
            f"the catalogue says {image.sha256}",
        )
    shutil.move(part.name, target)
    return target
