"""The lab health table's shape (``data/lab_health.yaml`` and a lab's ``lab/lab_health.yaml``),
declared once.  Imported only when the table is read (attrs and cattrs are not free)."""

from collections.abc import Mapping
from typing import Annotated, ClassVar

import attrs

from ..schema.checks import Pattern, Positive, Text
from ..schema.convert import hint

UsbId = Annotated[
    str,
    Pattern(
        r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", "{value!r} is not a USB vendor:product ID", "write it as 0bda:8153"
    ),
]
Driver = Annotated[str, Pattern(r"[A-Za-z0-9_.-]{1,64}", "{value!r} is not a driver name")]
Os = Annotated[str, Pattern(r"[a-z]{1,16}", "{value!r} is not an OS name", "linux, freebsd or netbsd")]


@attrs.frozen
class AdapterSchema:
    """What one adapter name of an inventory must look like on its host."""

    schema_noun: ClassVar[str] = "adapter keys"

    drivers: Mapping[Os, tuple[Driver, ...]] = attrs.field(factory=dict)
    usb: tuple[UsbId, ...] = ()
    usb_mbps: Annotated[float, Positive(100_000, "must be a USB speed in Mbit/s (480, 5000)")] | None = None


@attrs.frozen
class BoardSchema:
    """A board model (a substring of what it reports, or ``default``) and where it throttles."""

    schema_label: ClassVar[str] = "model"

    model: Annotated[str, Text()] = attrs.field(metadata=hint("name the model, or 'default'"))
    throttle_c: Annotated[float, Positive(200, "must be a temperature in °C")] = attrs.field(
        metadata=hint("give the temperature it throttles at, e.g. 85")
    )


@attrs.frozen
class HealthTableSchema:
    """The whole file: adapters by name, boards in order of precedence."""

    adapters: Mapping[Annotated[str, Text()], AdapterSchema] = attrs.field(factory=dict)
    boards: tuple[BoardSchema, ...] = ()
