"""The lab inventory: boards, peers and the links between them, read from a labgrid env.

labgrid owns the hosts (targets, ``NetworkService``, power drivers); what labgrid has no
words for (which target is the board, which interfaces are cabled to which, how fast a link
is, which known_hosts pins the keys) lives in a ``pinet:`` section of the same file, so one
file describes a lab completely.  See docs/inventory.md for the format.
"""

from __future__ import annotations

import ipaddress
import os
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from .. import secrets
from ..errors import ConfigError, LabFault
from ..host.platform import PLATFORMS, platform_named
from ..host.remote import RemoteHost, SshEndpoint
from ..host.shell import INTERFACE_NAME
from ..host.ssh_route import read_config, resolve
from ..model.board_models import BOARD_MODELS, board_model
from ..model.lab import DiskEntry, LinkEntry, RouteEntry
from .image_catalogue import Catalogue, CatalogueImage, catalogue_from_data

ROLES = ("board", "peer")
HOST_KEYS = frozenset({"role", "tcp_congestion", "power_on_at_start", "os", "become", "model"})
SSH_KEYS = frozenset({"known_hosts", "identity", "config"})
# Read when the env does not name an ssh_config, as OpenSSH (and so labgrid) reads it.
USER_SSH_CONFIG = Path("~/.ssh/config")
PINET_KEYS = frozenset({"lab", "kind", "ssh", "hosts", "links", "routes", "disks", "images"})
DISK_KEYS = frozenset({"name", "host", "device", "scratch", "bus"})
DEVICE = re.compile(r"^/dev/[A-Za-z0-9/_.:-]{1,128}$")  # by-id names hold colons
ROUTE_KEYS = frozenset({"name", "board", "lan", "wan"})
LINK_REQUIRED = (
    "name",
    "board",
    "board_interface",
    "board_address",
    "peer",
    "peer_interface",
    "peer_address",
)
LINK_KEYS = frozenset({*LINK_REQUIRED, "adapter", "speed_mbps", "mtu"})


@dataclass(frozen=True)
class HostEntry:
    """A host of the lab and how to reach it."""

    name: str
    role: str
    endpoint: SshEndpoint
    tcp_congestion: str | None = None  # passed to iperf3 -C when this host sends
    # Off until the test run boots it through labgrid (a QEMU board, a board on a PDU that
    # the lab keeps dark between runs); the run powers it off again at its end.
    power_on_at_start: bool = False
    # The coordinator place its NetworkService comes from (a RemotePlace target); the
    # endpoint is then filled in by resolve_remote() once the place is acquired.
    remote_place: str | None = None
    # Which operating system's commands reach it (host/platform); None: ``uname -s`` tells.
    os: str | None = None
    # "sudo": log in as an ordinary user, run what needs root through ``sudo -n``.
    become: str | None = None
    # The hardware model ("Pi 5", see board_models): what threshold rules and per-model
    # image kernels match; "" when the env does not say.
    model: str = ""

    def connect(self, connect_timeout: float = 10.0) -> RemoteHost:
        """A RemoteHost for this host, speaking its operating system's commands."""
        platform = platform_named(self.os) if self.os is not None else None
        return RemoteHost(self.endpoint, connect_timeout, platform, self.become)


@dataclass(frozen=True)
class Inventory:
    """Everything pinet knows about one lab (one labgrid env file)."""

    source: Path
    lab: str
    kind: str
    hosts: Mapping[str, HostEntry]
    links: tuple[LinkEntry, ...]
    routes: tuple[RouteEntry, ...] = ()
    disks: tuple[DiskEntry, ...] = ()
    # What ``!template $VAR`` was filled with beyond the environment (a reserved place's
    # LG_PLACE and LG_COORDINATOR), so labgrid reads the file the same way.
    substitutions: tuple[tuple[str, str], ...] = ()
    # The OS images its boards can be flashed with (pinet.images), and how each board takes them.
    catalogue: Catalogue = field(default_factory=Catalogue)

    @property
    def boards(self) -> list[HostEntry]:
        """Hosts under test."""
        return [h for h in self.hosts.values() if h.role == "board"]

    @property
    def peers(self) -> list[HostEntry]:
        """Hosts the boards talk to."""
        return [h for h in self.hosts.values() if h.role == "peer"]

    def model_of(self, host: str) -> str:
        """The model the env gives ``host`` ("" when it names none)."""
        entry = self.hosts.get(host)
        return entry.model if entry is not None else ""

    def image_for(self, name: str, board: str) -> CatalogueImage:
        """Catalogue image ``name`` as ``board`` must boot it: with the kernel its model starts."""
        image = self.catalogue.get(name, str(self.source))
        return image.for_model(self.model_of(board), board, str(self.source))

    def link(self, name: str) -> LinkEntry:
        """The link called ``name``."""
        for link in self.links:
            if link.name == name:
                return link
        raise ConfigError(
            str(self.source), f"no link named {name!r}", f"links: {[x.name for x in self.links]}"
        )


def load_inventory(path: str | Path, substitutions: Mapping[str, str] | None = None) -> Inventory:
    """Read a labgrid env file and its ``pinet:`` section; errors name file, key and fix.

    ``substitutions`` fill ``!template $VAR`` before the environment does (a place's own name).
    """
    source = Path(path)
    where = str(source)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(where, f"cannot read lab env file: {exc.strerror}", "check --pinet-lab") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(where, f"not UTF-8 text (byte {exc.start})", "give a YAML env file") from None
    try:
        loader = _EnvLoader(text)
        loader.substitutions = {**os.environ, **(substitutions or {})}
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(where, f"malformed YAML{line}", "fix the syntax") from None
    inventory = inventory_from_data(data, source)
    return replace(inventory, substitutions=tuple(sorted((substitutions or {}).items())))


class _EnvLoader(yaml.SafeLoader):
    """YAML as labgrid reads env files: safe, plus ``!template $VAR`` from the environment.

    An unset variable stays as written here (a file is checked before its place is known);
    labgrid itself refuses it when the env is used.
    """

    substitutions: Mapping[str, str] = {}


def _template(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    value = loader.construct_scalar(node)  # type: ignore[arg-type]
    mapping = loader.substitutions if isinstance(loader, _EnvLoader) else os.environ
    return string.Template(str(value)).safe_substitute(mapping)


_EnvLoader.add_constructor("!template", _template)


def inventory_from_data(data: Any, source: Path) -> Inventory:  # noqa: C901 - until its schema lands
    """Validate decoded env data and build the inventory."""
    where = str(source)
    if not isinstance(data, Mapping):
        raise ConfigError(where, "expected a mapping with 'targets' and 'pinet'")
    targets = data.get("targets")
    if not isinstance(targets, Mapping) or not targets:
        raise ConfigError(where, "'targets' is missing or empty", "declare one labgrid target per host")
    pinet = data.get("pinet")
    if not isinstance(pinet, Mapping):
        raise ConfigError(
            where, "'pinet' section is missing", "add pinet: {hosts: ..., links: ...}; see docs/inventory.md"
        )
    unknown = set(pinet) - PINET_KEYS
    if unknown:
        raise ConfigError(
            where, f"unknown keys in pinet: {sorted(unknown, key=str)}", f"allowed: {sorted(PINET_KEYS)}"
        )

    ssh = pinet.get("ssh", {})
    if not isinstance(ssh, Mapping):
        raise ConfigError(where, "pinet.ssh must be a mapping")
    known_hosts, identity, ssh_config = _ssh_settings(ssh, source)

    roles = pinet.get("hosts")
    if not isinstance(roles, Mapping) or not roles:
        raise ConfigError(where, "pinet.hosts is missing", "map each target name to {role: board|peer}")
    hosts: dict[str, HostEntry] = {}
    for name, entry in roles.items():
        key = f"pinet.hosts.{name}"
        if name not in targets:
            raise ConfigError(
                where, f"{key}: no labgrid target named {name!r}", f"targets: {sorted(targets, key=str)}"
            )
        role = entry.get("role") if isinstance(entry, Mapping) else None
        if role not in ROLES:
            raise ConfigError(where, f"{key}.role is {role!r}", f"use one of {list(ROLES)}")
        assert isinstance(entry, Mapping)
        unknown_host_keys = set(entry) - HOST_KEYS
        if unknown_host_keys:
            raise ConfigError(
                where,
                f"{key}: unknown keys {sorted(unknown_host_keys, key=str)}",
                f"allowed: {', '.join(sorted(HOST_KEYS))}",
            )
        become = entry.get("become")
        if become not in (None, "sudo"):
            raise ConfigError(
                where, f"{key}.become is {become!r}", "use sudo, or leave it out to run as the login user"
            )
        host_os = entry.get("os")
        if host_os is not None and host_os not in PLATFORMS:
            raise ConfigError(where, f"{key}.os is {host_os!r}", f"use one of {sorted(PLATFORMS)}")
        power_on_at_start = entry.get("power_on_at_start", False)
        if not isinstance(power_on_at_start, bool):
            raise ConfigError(
                where, f"{key}.power_on_at_start must be true or false, got {power_on_at_start!r}"
            )
        congestion = entry.get("tcp_congestion")
        if congestion is not None and not (
            isinstance(congestion, str) and re.fullmatch(r"[a-z0-9_]{1,16}", congestion)
        ):
            raise ConfigError(where, f"{key}.tcp_congestion {congestion!r} is not a congestion control name")
        remote_place = _remote_place(name, targets[name], where)
        if remote_place is not None:
            # Reached through the coordinator's place: the exporter's NetworkService named
            # after the host gives the address once the place is acquired.
            endpoint = SshEndpoint(name, "", "root", 22, identity, known_hosts, ssh_config=ssh_config)
        else:
            endpoint = _endpoint(name, targets[name], where, identity, known_hosts, ssh_config)
        model = board_model(entry.get("model"), where, f"{key}.model")
        hosts[name] = HostEntry(
            name, role, endpoint, congestion, power_on_at_start, remote_place, host_os, become, model
        )

    links_raw = pinet.get("links", [])
    if not isinstance(links_raw, list):
        raise ConfigError(where, "pinet.links must be a list")
    links = tuple(_link(raw, f"pinet.links[{n}]", where, hosts) for n, raw in enumerate(links_raw))
    names = [link.name for link in links]
    if len(set(names)) != len(names):
        raise ConfigError(where, "pinet.links: link names must be unique")
    routes_raw = pinet.get("routes", [])
    if not isinstance(routes_raw, list):
        raise ConfigError(where, "pinet.routes must be a list")
    routes = tuple(_route(raw, f"pinet.routes[{n}]", where, links) for n, raw in enumerate(routes_raw))
    disks_raw = pinet.get("disks", [])
    if not isinstance(disks_raw, list):
        raise ConfigError(where, "pinet.disks must be a list")
    disks = tuple(_disk(raw, f"pinet.disks[{n}]", where, hosts) for n, raw in enumerate(disks_raw))
    boards = [name for name, host in hosts.items() if host.role == "board"]
    catalogue = catalogue_from_data(pinet.get("images"), targets, boards, source)
    _check_kernels_per_model(hosts, catalogue, where)
    return Inventory(
        source,
        str(pinet.get("lab", source.stem)),
        str(pinet.get("kind", "hardware")),
        hosts,
        links,
        routes,
        disks,
        catalogue=catalogue,
    )


def _check_kernels_per_model(hosts: Mapping[str, HostEntry], catalogue: Catalogue, where: str) -> None:
    """Every image a board can take must promise the kernel the board's model boots: a Pi 5
    given an image that expects Raspberry Pi OS's -rpi-v8 kernel boots -rpi-2712, and every
    flash would end in a provisioning fault in the night instead of an error now."""
    for host in hosts.values():
        if host.role != "board":
            continue
        flavour = BOARD_MODELS.get(host.model, "")
        for image in catalogue.images:
            if not catalogue.can_take(host.name, image):
                continue
            kernel = image.for_model(host.model, host.name, where).kernel
            others = sorted(
                f for f in set(BOARD_MODELS.values()) if f and f != flavour and kernel.endswith(f)
            )
            if flavour and others:
                raise ConfigError(
                    where,
                    f"pinet.images[{image.name}].kernel expects {kernel}, but {host.name} is a {host.model}, "
                    f"whose Raspberry Pi OS kernel ends in -{flavour}",
                    f'give the kernel per model: kernel: {{"{host.model}": "...-{flavour}", ...}}',
                )


def _disk(raw: Any, key: str, where: str, hosts: Mapping[str, HostEntry]) -> DiskEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, f"{key} must be a mapping", f"keys: {sorted(DISK_KEYS)}")
    unknown = set(raw) - DISK_KEYS
    missing = sorted({"name", "host", "device"} - set(raw))
    if unknown or missing:
        raise ConfigError(
            where,
            f"{key}: unknown keys {sorted(unknown, key=str)}, missing {missing}",
            f"keys: {sorted(DISK_KEYS)}",
        )
    if not isinstance(raw["host"], str) or raw["host"] not in hosts:
        raise ConfigError(where, f"{key}.host: {raw['host']!r} is not in pinet.hosts")
    device = raw["device"]
    if not isinstance(device, str) or not DEVICE.match(device) or ".." in device:
        raise ConfigError(where, f"{key}.device {device!r} is not a /dev path", "e.g. /dev/sda")
    scratch = raw.get("scratch", False)
    if not isinstance(scratch, bool):
        raise ConfigError(where, f"{key}.scratch must be true or false, got {scratch!r}")
    return DiskEntry(str(raw["name"]), str(raw["host"]), device, scratch, str(raw.get("bus", "usb")))


def _route(raw: Any, key: str, where: str, links: tuple[LinkEntry, ...]) -> RouteEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, f"{key} must be a mapping", "name, board, lan (link name), wan (link name)")
    unknown = set(raw) - ROUTE_KEYS
    missing = sorted(ROUTE_KEYS - set(raw))
    if unknown or missing:
        raise ConfigError(
            where,
            f"{key}: unknown keys {sorted(unknown, key=str)}, missing {missing}",
            f"keys: {sorted(ROUTE_KEYS)}",
        )
    by_name = {link.name: link for link in links}
    ends = []
    for side in ("lan", "wan"):
        link = by_name.get(str(raw[side]))
        if link is None:
            raise ConfigError(
                where, f"{key}.{side}: no link named {raw[side]!r}", f"links: {sorted(by_name)}"
            )
        if link.board != raw["board"]:
            raise ConfigError(
                where, f"{key}.{side}: link {link.name!r} is not a link of board {raw['board']!r}"
            )
        ends.append(link)
    lan, wan = ends
    if lan.name == wan.name or lan.peer == wan.peer:
        raise ConfigError(where, f"{key}: lan and wan must be two links to two different peers")
    return RouteEntry(str(raw["name"]), str(raw["board"]), lan, wan)


def _resources(target: Any) -> dict[str, Any]:
    """A target's resources by class, from labgrid's mapping or list form."""
    resources = target.get("resources") if isinstance(target, Mapping) else None
    if isinstance(resources, Mapping):
        return dict(resources)
    found: dict[str, Any] = {}
    if isinstance(resources, list):  # labgrid also accepts a list of single-key mappings
        for item in resources:
            if isinstance(item, Mapping):
                found.update(item)
    return found


def _remote_place(name: str, target: Any, where: str) -> str | None:
    """The place name of a target backed by a coordinator's RemotePlace, else None."""
    resources = _resources(target)
    if "RemotePlace" not in resources or "NetworkService" in resources:
        return None
    remote = resources["RemotePlace"]
    place = remote.get("name") if isinstance(remote, Mapping) else None
    if not isinstance(place, str) or not re.fullmatch(r"[A-Za-z0-9_.$+-]{1,64}", place):
        raise ConfigError(where, f"targets.{name}.resources.RemotePlace.name {place!r} is not a place name")
    return place


def resolve_remote(inventory: Inventory, environment: Callable[[], Any] | None = None) -> Inventory:
    """Fill in the endpoints of RemotePlace hosts from the acquired place's NetworkServices.

    The exporter names each NetworkService after the host (``pi``, ``pc``, ...); labgrid's
    RemotePlace hands them to the target once this user holds the place.
    """
    remote = [h for h in inventory.hosts.values() if h.remote_place is not None]
    if not remote:
        return inventory
    from labgrid.resource import NetworkService

    from .labgrid_env import open_environment

    env = environment() if environment else open_environment(inventory.source, dict(inventory.substitutions))
    hosts = dict(inventory.hosts)
    try:
        for host in remote:
            try:
                service = env.get_target(host.name).get_resource(NetworkService, name=host.name)
            except Exception as exc:  # noqa: BLE001 - labgrid: place not acquired, no such resource, no coordinator
                raise LabFault(
                    "coordinator",
                    f"{inventory.source}: no NetworkService {host.name!r} in place {host.remote_place}: "
                    f"{type(exc).__name__}: {exc}",
                    host.name,
                ) from None
            data = {"address": service.address, "username": service.username, "port": service.port}
            if getattr(service, "password", ""):
                data["password"] = service.password
            endpoint = _endpoint(
                host.name,
                {"resources": {"NetworkService": data}},
                f"{inventory.source} (place {host.remote_place})",
                host.endpoint.identity,
                host.endpoint.known_hosts,
                host.endpoint.ssh_config,
            )
            hosts[host.name] = replace(host, endpoint=endpoint)
    finally:
        env.cleanup()
    return replace(inventory, hosts=hosts)


def _endpoint(
    name: str,
    target: Any,
    where: str,
    identity: Path | None,
    known_hosts: Path,
    ssh_config: Path | None = None,
) -> SshEndpoint:
    key = f"targets.{name}.resources.NetworkService"
    service = _resources(target).get("NetworkService")
    if not isinstance(service, Mapping):
        raise ConfigError(where, f"{key} is missing", "pinet reaches hosts over SSH: add a NetworkService")
    address = service.get("address")
    if not isinstance(address, str) or not address:
        raise ConfigError(where, f"{key}.address is missing")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if not re.fullmatch(r"[A-Za-z0-9.-]{1,253}", address):
            raise ConfigError(
                where, f"{key}.address {address!r} is neither an IP address nor a host name"
            ) from None
    username = service.get("username")
    if not isinstance(username, str) or not re.fullmatch(r"[a-z_][a-z0-9_.-]{0,31}", username):
        raise ConfigError(where, f"{key}.username {username!r} is not a valid user name")
    port = service.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(where, f"{key}.port must be 1..65535, got {port!r}")
    password = service.get("password") or None
    secrets.register(str(password) if password else None)
    endpoint = SshEndpoint(
        name, address, username, port, identity, known_hosts, str(password) if password else None, ssh_config
    )
    # An alias the ssh_config cannot route (a jump host without a user, a ProxyCommand) is
    # the env's error now, not a lab fault in the night.
    if ssh_config is not None:
        resolve(address, username, port, read_config(ssh_config), str(ssh_config))
    return endpoint


def _link(raw: Any, key: str, where: str, hosts: Mapping[str, HostEntry]) -> LinkEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, f"{key} must be a mapping")
    unknown = set(raw) - LINK_KEYS
    if unknown:
        raise ConfigError(
            where, f"{key}: unknown keys {sorted(unknown, key=str)}", f"allowed: {sorted(LINK_KEYS)}"
        )
    missing = [k for k in LINK_REQUIRED if k not in raw]
    if missing:
        raise ConfigError(where, f"{key}: missing {missing}")
    for side, role in (("board", "board"), ("peer", "peer")):
        host = raw[side]
        if not isinstance(host, str) or host not in hosts or hosts[host].role != role:
            raise ConfigError(where, f"{key}.{side}: {host!r} is not a {role} in pinet.hosts")
        interface = raw[f"{side}_interface"]
        if not isinstance(interface, str) or not INTERFACE_NAME.match(interface):
            raise ConfigError(
                where,
                f"{key}.{side}_interface {interface!r} is not a valid interface name",
                "1-15 characters of letters, digits and _.:@-",
            )
        try:
            ipaddress.ip_address(str(raw[f"{side}_address"]))
        except ValueError:
            raise ConfigError(
                where, f"{key}.{side}_address {raw[f'{side}_address']!r} is not an IP address"
            ) from None
    speed = raw.get("speed_mbps", 1000)
    mtu = raw.get("mtu", 1500)
    for field_name, value, low, high in (("speed_mbps", speed, 1, 400_000), ("mtu", mtu, 68, 65535)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(where, f"{key}.{field_name} must be an integer {low}..{high}, got {value!r}")
    return LinkEntry(
        name=str(raw["name"]),
        board=str(raw["board"]),
        board_interface=str(raw["board_interface"]),
        board_address=str(raw["board_address"]),
        peer=str(raw["peer"]),
        peer_interface=str(raw["peer_interface"]),
        peer_address=str(raw["peer_address"]),
        adapter=str(raw.get("adapter", "unknown")),
        speed_mbps=speed,
        mtu=mtu,
    )


def _ssh_settings(ssh: Mapping[str, Any], source: Path) -> tuple[Path, Path | None, Path | None]:
    """``pinet.ssh``: the pinned known_hosts, the lab's own key (optional: without it the
    agent, ``~/.ssh`` keys and the ssh_config's IdentityFile are tried) and the ssh_config to
    follow (``config: none`` for none; default ``~/.ssh/config`` when there is one)."""
    unknown = set(ssh) - SSH_KEYS
    if unknown:
        raise ConfigError(
            str(source),
            f"unknown keys in pinet.ssh: {sorted(unknown, key=str)}",
            f"allowed: {sorted(SSH_KEYS)}",
        )
    known_hosts = _path(ssh.get("known_hosts"), source, "pinet.ssh.known_hosts", required=True)
    assert known_hosts is not None
    identity = _path(ssh.get("identity"), source, "pinet.ssh.identity", required=False)
    config = ssh.get("config")
    if config is None:
        default = USER_SSH_CONFIG.expanduser()
        return known_hosts, identity, default if default.is_file() else None
    if config is False or config == "none":
        return known_hosts, identity, None
    return known_hosts, identity, _path(config, source, "pinet.ssh.config", required=False)


def _path(value: Any, source: Path, key: str, *, required: bool) -> Path | None:
    if value is None:
        if required:
            raise ConfigError(
                str(source), f"{key} is missing", "pinet pins host keys: give a known_hosts file"
            )
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(str(source), f"{key} must be a path")
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = source.parent / path
    if not path.is_file():
        raise ConfigError(str(source), f"{key}: {path} does not exist")
    return path
