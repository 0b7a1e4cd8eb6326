"""The lab env file's shape, declared once: the ``pinet:`` section and the labgrid resources pinet reads.

What one value may hold is here (a role is ``board`` or ``peer``, an interface name is 1-15 plain
characters, a speed a positive integer); what ties values together (a link's board is a host
with the board role, a route's links exist, a known_hosts file exists) is checked where the
inventory is built, in ``inventory.py``.  A new key (a board's ``model:``, ``ssh.config``) is
one line here with its check.  Imported only when an env file is read (attrs and cattrs are not
free to import).
"""

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import attrs

from ..host.platform import PLATFORMS
from ..host.shell import INTERFACE_NAME
from ..schema.checks import (
    BoardModel,
    Check,
    Flag,
    Integer,
    Invalid,
    IpAddress,
    NonEmpty,
    OneOf,
    PathText,
    Pattern,
    Positive,
    Text,
)
from ..schema.convert import hint, structure

ROLES = ("board", "peer")
DEVICE = re.compile(r"/dev/[A-Za-z0-9/_.:-]{1,128}")  # by-id names hold colons
HOST_NAME = re.compile(r"[A-Za-z0-9.-]{1,253}")


class DevicePath(Check):
    """A block device under /dev, with nothing a shell or a ``..`` could turn into another file."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not DEVICE.fullmatch(value) or ".." in value:
            raise Invalid(f"{value!r} is not a /dev path", "e.g. /dev/sda")
        return value


class HostAddress(Check):
    """Where a host's sshd listens: an IP address or a host name."""

    def __call__(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise Invalid("is missing")
        try:
            ipaddress.ip_address(value)
        except ValueError:
            if not HOST_NAME.fullmatch(value):
                raise Invalid(f"{value!r} is neither an IP address nor a host name") from None
        return value


class SshConfigFile(Check):
    """``pinet.ssh.config``: an ssh_config file, or ``none`` (``false``) to follow none."""

    def __call__(self, value: Any) -> str:
        if value is False or value == "none":
            return "none"
        return PathText()(value)


Interface = Annotated[
    str,
    Pattern(
        INTERFACE_NAME,
        "{value!r} is not a valid interface name",
        "1-15 characters of letters, digits and _.:@-",
    ),
]
Name = Annotated[str, Text()]


@attrs.frozen
class NetworkService:
    """labgrid's NetworkService resource of a target: how pinet reaches the host over SSH.

    Open: the keys beyond these are labgrid's to check.
    """

    schema_open: ClassVar[bool] = True

    address: Annotated[str, HostAddress()]
    username: Annotated[str, Pattern(r"[a-z_][a-z0-9_.-]{0,31}", "{value!r} is not a valid user name")]
    port: Annotated[int, Integer(1, 65535, "must be 1..65535, got {value!r}")] = 22
    password: Annotated[str, Text()] | None = None


@attrs.frozen
class RemotePlace:
    """labgrid's RemotePlace resource: the coordinator place a host's NetworkService comes from."""

    schema_open: ClassVar[bool] = True

    name: Annotated[str, Pattern(r"[A-Za-z0-9_.$+-]{1,64}", "{value!r} is not a place name")]


@attrs.frozen
class SshSection:
    """How every host's key is pinned, which private key logs in and which ssh_config is followed."""

    known_hosts: Annotated[str, PathText()] = attrs.field(
        metadata=hint("pinet pins host keys: give a known_hosts file")
    )
    # Without it: the ssh-agent, then ~/.ssh/id_* and the ssh_config's IdentityFile.
    identity: Annotated[str, PathText()] | None = None
    # Left out: ~/.ssh/config when there is one, as OpenSSH (and so labgrid) reads it.
    config: Annotated[str, SshConfigFile()] | None = None


@attrs.frozen
class HostSchema:
    """A labgrid target's part in the lab, and how pinet logs in and powers it."""

    role: Annotated[str, OneOf(ROLES)] = attrs.field(metadata=hint("give role: board or peer"))
    tcp_congestion: (
        Annotated[str, Pattern(r"[a-z0-9_]{1,16}", "{value!r} is not a congestion control name")] | None
    ) = None
    power_on_at_start: Annotated[bool, Flag()] = False
    os: Annotated[str, OneOf(sorted(PLATFORMS))] | None = None
    become: Annotated[str, OneOf(("sudo",), "use sudo, or leave it out to run as the login user")] | None = (
        None
    )
    # The hardware (model/board_models): threshold rules and per-model image kernels match it.
    model: Annotated[str, BoardModel()] | None = None
    # A board whose seconds scatter more than a cable's (an emulated board, Wi-Fi): an
    # adaptive run over it stops once its mean is known to this percent, or the run-wide
    # --pinet-adaptive-precision when that is wider.
    adaptive_precision_pct: Annotated[float, Positive(50, "must be at most {at_most:g} %")] | None = None
    # The lab's own build of the UDP generator on this host (an absolute path), for a board
    # with no compiler (QNX: cross-compiled with qcc); pinet checks its --version first.
    udpgen: (
        Annotated[str, Pattern(r"/[A-Za-z0-9_./-]{1,200}", "{value!r} is not an absolute path")] | None
    ) = None


@attrs.frozen
class LinkSchema:
    """A cable between a board interface and a peer interface, with its test-network addresses."""

    name: Name
    board: Name
    board_interface: Interface
    board_address: Annotated[str, IpAddress()]
    peer: Name
    peer_interface: Interface
    peer_address: Annotated[str, IpAddress()]
    adapter: Name = "unknown"
    speed_mbps: Annotated[int, Integer(1, 400_000)] = 1000
    mtu: Annotated[int, Integer(68, 65535)] = 1500
    # The interrupts of each end's interface, by /proc/interrupts name or number, where the
    # driver does not name them like the interface (virtio0-input.0, xhci_hcd); without them
    # they are found by the name, else from the interface's device.
    board_irqs: tuple[Name, ...] = ()
    peer_irqs: tuple[Name, ...] = ()
    # The bus of the board's adapter where its model cannot tell (a CM4 carrier board's own
    # USB 3 controller, a PCIe NIC): its path's limit comes from it (judge.path_limit).
    bus: Annotated[str, OneOf(("usb2", "usb3", "pcie"))] | None = None


@attrs.frozen
class RouteSchema:
    """A board routing between two of its links (link names)."""

    name: Name
    board: Name
    lan: Name
    wan: Name
    omit_s: Annotated[int, Integer(1, 60)] | None = None


@attrs.frozen
class DiskSchema:
    """A block device of a host for the storage suite."""

    name: Name
    host: Name
    device: Annotated[str, DevicePath()]
    scratch: Annotated[bool, Flag()] = False
    # usb: the model's fastest USB port; usb2 or usb3 where the port is known (its limit).
    bus: Name = "usb"


HostName = Annotated[str, Text("{value!r} is not a host name", numbers=False)]


@attrs.frozen
class PinetSection:
    """The env file's ``pinet:`` section: what labgrid has no words for."""

    ssh: SshSection = attrs.field(metadata=hint("pinet pins host keys: give ssh: {known_hosts: FILE}"))
    hosts: Annotated[
        Mapping[HostName, HostSchema], NonEmpty(fix="map each target name to {role: board|peer}")
    ] = attrs.field(metadata=hint("map each target name to {role: board|peer}"))
    links: tuple[LinkSchema, ...] = ()
    routes: tuple[RouteSchema, ...] = ()
    disks: tuple[DiskSchema, ...] = ()
    lab: Name | None = None
    kind: Name | None = None
    images: Any = None  # the image catalogue: read by its own schema (image_catalogue_schema)
    # What the lab plans but could not bring up here (a board, its links), each with why: the
    # virtual lab's QEMU board on a machine without QEMU; its tests skip with the reason.
    absent: Mapping[HostName, Name] = attrs.field(factory=dict)
    # A file every lab sharing this lab's machines names: their traffic takes turns
    # (lab/traffic_turn.py).  The virtual lab names this machine's; hardware rarely needs one.
    traffic_turn: Annotated[str, PathText()] | None = None
    # The drop one night is asked to catch, percent: the lab's standing --pinet-detect (the
    # option, when given, wins for that run).
    detect: Annotated[float, Positive(50, "must be at most {at_most:g} %")] | None = None


@attrs.frozen
class EnvFile:
    """A labgrid env file as pinet reads it; its other keys (options, imports, tools) are labgrid's."""

    schema_open: ClassVar[bool] = True

    targets: Annotated[Mapping[Any, Any], NonEmpty(fix="declare one labgrid target per host")] = attrs.field(
        metadata=hint("declare one labgrid target per host")
    )
    pinet: PinetSection = attrs.field(
        metadata=hint("add pinet: {hosts: ..., links: ...}; see docs/inventory.md")
    )


def read_env_file(data: Any, source: str) -> EnvFile:
    """Decoded YAML as an env file, or a ConfigError naming the file, the key path and the fix."""
    return structure(data, EnvFile, source)


def read_network_service(service: Any, source: str, key: str) -> NetworkService:
    """A target's NetworkService (from the file, or from an acquired place) as checked values."""
    return structure(service, NetworkService, source, key)


def read_remote_place(remote: Any, source: str, key: str) -> RemotePlace:
    """A target's RemotePlace resource as checked values."""
    return structure(remote, RemotePlace, source, key)
