"""The image catalogue's shape (``pinet: images:``), declared once: what one image entry holds.

What ties an entry's keys together (a url needs a sha256; an sd-card image needs a path or a
url, a netboot image its files) and names unique across entries is checked in
``image_catalogue.py``.  Imported only when an env file is read (attrs and cattrs are not free).
"""

import re
import urllib.parse
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from ..model.lab import IMAGE_NAME
from ..schema.checks import (
    BoardModel,
    Check,
    Invalid,
    NonEmpty,
    NonEmptyText,
    OneOf,
    PathText,
    Pattern,
    Satisfies,
    Text,
)
from ..schema.convert import hint, structure

DELIVERIES = ("sd-card", "netboot")
SHA256 = re.compile(r"[0-9a-f]{64}")
File = Annotated[str, PathText()]
KERNEL = "must be the release uname -r shows, a pattern, or one per model"
KERNEL_FIX = 'e.g. 6.6.*-v8+, or one per model: {"Pi 4B": "6.12.*+rpt-rpi-v8", "Pi 5": "6.12.*+rpt-rpi-2712"}'
Kernel = Annotated[str, NonEmptyText(KERNEL, KERNEL_FIX, strip=True)]
# Raspberry Pi OS is one image for the 64-bit Pis whose bootloader starts another kernel per
# model (-rpi-v8 on a Pi 4, -rpi-2712 on a Pi 5): such an image names its kernel per model.
KernelByModel = Mapping[
    Annotated[str, BoardModel("{value!r} is not a known board model or kernel flavour", flavours=True)],
    Annotated[str, NonEmptyText("must be the release uname -r shows, or a pattern", strip=True)],
]


class Sha256(Check):
    """A sha256 as 64 hex digits, kept in lower case (how hashlib writes it)."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not SHA256.fullmatch(value.lower()):
            raise Invalid("is not 64 hex digits")
        return value.lower()


class Url(Check):
    """Where to download an image from: http(s), or a file URL."""

    def __call__(self, value: Any) -> str:
        text = value if isinstance(value, str) else ""
        if urllib.parse.urlparse(text).scheme not in ("http", "https", "file"):
            raise Invalid(f"{value!r} is not an http(s) or file URL")
        return text


@attrs.frozen
class OsRelease:
    """What /etc/os-release must show once the image boots (other keys are notes to the reader)."""

    schema_open: ClassVar[bool] = True

    id: Annotated[str, Text()] = attrs.field(metadata=hint("as ID and VERSION_ID in /etc/os-release"))
    version: Annotated[str, Text()] = attrs.field(metadata=hint("as ID and VERSION_ID in /etc/os-release"))


@attrs.frozen
class NetbootSchema:
    """Files a network-booting board fetches over TFTP, and its boot configuration."""

    kernel: File = attrs.field(metadata=hint("name the kernel file to stage"))
    dtb: File | None = None
    initrd: File | None = None
    config: Annotated[str, Text()] | None = None


@attrs.frozen
class ImageSchema:
    """One image as written; errors show its name beside its index (``pinet.images[0] (bookworm)``)."""

    schema_label: ClassVar[str] = "name"

    name: Annotated[str, Pattern(IMAGE_NAME, "{value!r} is not a name", "letters, digits, . _ + -")]
    os: OsRelease = attrs.field(metadata=hint("os: {id: ..., version: ...} as in /etc/os-release"))
    kernel: Annotated[Kernel | KernelByModel, NonEmpty(KERNEL, KERNEL_FIX)]
    delivery: Annotated[str, OneOf(DELIVERIES)]
    path: File | None = None
    url: Annotated[str, Url()] | None = None
    sha256: Annotated[str, Sha256()] | None = None
    bmap: File | None = None
    arch: Annotated[str, Text()] | None = None
    netboot: NetbootSchema | None = None
    write: Annotated[str, OneOf(("auto", "dd", "bmaptool"), "use auto, dd or bmaptool")] = "auto"


@attrs.frozen
class ImagesSection:
    """``pinet.images``: one mapping per image."""

    images: Annotated[
        tuple[ImageSchema, ...],
        Satisfies(
            lambda value: isinstance(value, list),
            "must be a list",
            "one mapping per image; see docs/images-and-kernels.md",
        ),
    ]


def read_images(raw: Any, source: str) -> tuple[ImageSchema, ...]:
    """``pinet.images`` as checked entries, or a ConfigError naming the file, the image and the key."""
    return structure({"images": raw}, ImagesSection, source, "pinet").images
