"""The lab inventory: boards, peers and the links between them, read from a labgrid env.

labgrid owns the hosts (targets, ``NetworkService``, power drivers); what labgrid has no
words for (which target is the board, which interfaces are cabled to which, how fast a link
is, which known_hosts pins the keys) lives in a ``pinet:`` section of the same file, so one
file describes a lab completely.  See docs/inventory.md for the format.
"""

from __future__ import annotations

import os
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from .. import redaction
from ..errors import ConfigError, LabFault
from ..host.platform import platform_named
from ..host.remote import RemoteHost, SshEndpoint
from ..host.ssh_route import read_config, resolve
from ..model.board_models import BOARD_MODELS
from ..model.lab import DiskEntry, LinkEntry, RouteEntry
from ..yaml_text import SAFE_LOADER
from .image_catalogue import Catalogue, CatalogueImage, catalogue_from_data

if TYPE_CHECKING:  # the schema is imported when a file is read, not with this module
    from .inventory_schema import DiskSchema, HostSchema, LinkSchema, RouteSchema, SshSection

# Read when the env does not name an ssh_config, as OpenSSH (and so labgrid) reads it.
USER_SSH_CONFIG = Path("~/.ssh/config")


class SshSettings(NamedTuple):
    """How every host of the lab is logged into (``pinet.ssh``)."""

    identity: Path | None  # the lab's own key, and only it; None: agent and ~/.ssh keys
    known_hosts: Path  # every hop's key is pinned here
    config: Path | None  # the ssh_config followed for aliases and ProxyJump; None: none


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
    # How closely an adaptive run over this board must know its mean before it stops, where
    # the board's seconds scatter more than the run-wide rule allows for; None: that rule.
    adaptive_precision_pct: float | None = None
    # The lab's own build of the UDP generator on this host (QNX: cross-compiled); None:
    # pinet builds it there.
    udpgen: str | None = None

    def connect(self, connect_timeout: float = 10.0) -> RemoteHost:
        """A RemoteHost for this host, speaking its operating system's commands."""
        platform = platform_named(self.os) if self.os is not None else None
        return RemoteHost(self.endpoint, connect_timeout, platform, self.become, self.udpgen)


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
    # Boards and links the lab plans but could not bring up here, each with why (pinet.absent).
    absent: Mapping[str, str] = field(default_factory=dict)
    # The turn file its traffic waits for (pinet.traffic_turn); None: it takes no turns.
    traffic_turn: Path | None = None
    # The drop one night is asked to catch (pinet.detect; --pinet-detect wins); None: none.
    detect_pct: float | None = None

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
    inventory = inventory_from_data(read_env_data(source, substitutions), source)
    return replace(inventory, substitutions=tuple(sorted((substitutions or {}).items())))


def read_env_data(source: Path, substitutions: Mapping[str, str] | None = None) -> Any:
    """An env file's YAML as labgrid reads it (``!template`` filled), or a ConfigError naming
    the file: unreadable, not UTF-8 text (a binary file) or malformed YAML."""
    where = str(source)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            where, f"cannot read lab env file: {exc.strerror}", "check the name given"
        ) from None
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
    return data


def check_env_shape(source: Path) -> None:
    """What labgrid itself needs of an env file: readable YAML text, a mapping, at least one
    target.  Checked before labgrid's plugin reads a file named by ``--lg-env`` or ``LG_ENV``
    (labgrid answers these with an INTERNALERROR), for labgrid users who never use pinet too."""
    data = read_env_data(source)
    if not isinstance(data, Mapping):
        raise ConfigError(str(source), f"expected a mapping with 'targets', got {type(data).__name__}")
    targets = data.get("targets")
    if not isinstance(targets, Mapping) or not targets:
        raise ConfigError(str(source), "'targets' is missing or empty", "declare one labgrid target per host")


class _EnvLoader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """YAML as labgrid reads env files: safe, plus ``!template $VAR`` from the environment;
    parsed by libyaml where PyYAML has it (yaml_text.py), 10 times faster for the same data.

    An unset variable stays as written here (a file is checked before its place is known);
    labgrid itself refuses it when the env is used.
    """

    substitutions: Mapping[str, str] = {}


def _template(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    value = loader.construct_scalar(node)  # type: ignore[arg-type]
    mapping = loader.substitutions if isinstance(loader, _EnvLoader) else os.environ
    return string.Template(str(value)).safe_substitute(mapping)


_EnvLoader.add_constructor("!template", _template)


def inventory_from_data(data: Any, source: Path) -> Inventory:
    """Validate decoded env data (its shape against the declared schema, then what ties its parts
    together) and build the inventory."""
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never loads a lab anything at plugin import (issue 27).
    from .inventory_schema import read_env_file

    where = str(source)
    env = read_env_file(data, where)
    pinet = env.pinet
    ssh = _ssh_settings(pinet.ssh, source)
    hosts = {name: _host(name, entry, env.targets, where, ssh) for name, entry in pinet.hosts.items()}
    links = tuple(_link(raw, f"pinet.links[{n}]", where, hosts) for n, raw in enumerate(pinet.links))
    names = [link.name for link in links]
    if len(set(names)) != len(names):
        raise ConfigError(where, "pinet.links: link names must be unique")
    routes = tuple(_route(raw, f"pinet.routes[{n}]", where, links) for n, raw in enumerate(pinet.routes))
    disks = tuple(_disk(raw, f"pinet.disks[{n}]", where, hosts) for n, raw in enumerate(pinet.disks))
    boards = [name for name, host in hosts.items() if host.role == "board"]
    catalogue = catalogue_from_data(pinet.images, env.targets, boards, source)
    _check_kernels_per_model(hosts, catalogue, where)
    return Inventory(
        source,
        pinet.lab if pinet.lab is not None else source.stem,
        pinet.kind if pinet.kind is not None else "hardware",
        hosts,
        links,
        routes,
        disks,
        catalogue=catalogue,
        absent=dict(pinet.absent),
        traffic_turn=_turn_file(pinet.traffic_turn, source),
        detect_pct=pinet.detect,
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


def _host(
    name: str, entry: HostSchema, targets: Mapping[Any, Any], where: str, ssh: SshSettings
) -> HostEntry:
    """A host of ``pinet.hosts`` joined with its labgrid target, which says how it is reached."""
    if name not in targets:
        raise ConfigError(
            where,
            f"pinet.hosts.{name}: no labgrid target named {name!r}",
            f"targets: {sorted(targets, key=str)}",
        )
    remote_place = _remote_place(name, targets[name], where)
    if remote_place is not None:
        # Reached through the coordinator's place: the exporter's NetworkService named
        # after the host gives the address once the place is acquired.
        endpoint = SshEndpoint(name, "", "root", 22, ssh.identity, ssh.known_hosts, ssh_config=ssh.config)
    else:
        endpoint = _endpoint(name, targets[name], where, ssh)
    return HostEntry(
        name,
        entry.role,
        endpoint,
        entry.tcp_congestion,
        entry.power_on_at_start,
        remote_place,
        entry.os,
        entry.become,
        entry.model or "",
        entry.adaptive_precision_pct,
        entry.udpgen,
    )


def _disk(raw: DiskSchema, key: str, where: str, hosts: Mapping[str, HostEntry]) -> DiskEntry:
    if raw.host not in hosts:
        raise ConfigError(where, f"{key}.host: {raw.host!r} is not in pinet.hosts")
    return DiskEntry(raw.name, raw.host, raw.device, raw.scratch, raw.bus)


def _route(raw: RouteSchema, key: str, where: str, links: tuple[LinkEntry, ...]) -> RouteEntry:
    by_name = {link.name: link for link in links}
    ends = []
    for side in ("lan", "wan"):
        link = by_name.get(getattr(raw, side))
        if link is None:
            raise ConfigError(
                where, f"{key}.{side}: no link named {getattr(raw, side)!r}", f"links: {sorted(by_name)}"
            )
        if link.board != raw.board:
            raise ConfigError(where, f"{key}.{side}: link {link.name!r} is not a link of board {raw.board!r}")
        ends.append(link)
    lan, wan = ends
    if lan.name == wan.name or lan.peer == wan.peer:
        raise ConfigError(where, f"{key}: lan and wan must be two links to two different peers")
    return RouteEntry(raw.name, raw.board, lan, wan, raw.omit_s)


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
    from .inventory_schema import read_remote_place  # the schema library, only when a file is read

    resources = _resources(target)
    if "RemotePlace" not in resources or "NetworkService" in resources:
        return None
    key = f"targets.{name}.resources.RemotePlace"
    return read_remote_place(resources["RemotePlace"], where, key).name


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
                SshSettings(host.endpoint.identity, host.endpoint.known_hosts, host.endpoint.ssh_config),
            )
            hosts[host.name] = replace(host, endpoint=endpoint)
    finally:
        env.cleanup()
    return replace(inventory, hosts=hosts)


def _endpoint(name: str, target: Any, where: str, ssh: SshSettings) -> SshEndpoint:
    """A host's NetworkService as an endpoint; an alias its ssh_config cannot route (a jump host
    without a user, a ProxyCommand) is the env's error now, not a lab fault in the night."""
    from .inventory_schema import read_network_service  # the schema library, only when a file is read

    key = f"targets.{name}.resources.NetworkService"
    service = _resources(target).get("NetworkService")
    if service is None:
        raise ConfigError(where, f"{key} is missing", "pinet reaches hosts over SSH: add a NetworkService")
    checked = read_network_service(service, where, key)
    password = checked.password or None
    redaction.register(password)
    if ssh.config is not None:
        resolve(checked.address, checked.username, checked.port, read_config(ssh.config), str(ssh.config))
    return SshEndpoint(
        name,
        checked.address,
        checked.username,
        checked.port,
        ssh.identity,
        ssh.known_hosts,
        password,
        ssh.config,
    )


def _link(raw: LinkSchema, key: str, where: str, hosts: Mapping[str, HostEntry]) -> LinkEntry:
    for side in ("board", "peer"):
        host = getattr(raw, side)
        if host not in hosts or hosts[host].role != side:
            raise ConfigError(where, f"{key}.{side}: {host!r} is not a {side} in pinet.hosts")
    return LinkEntry(
        name=raw.name,
        board=raw.board,
        board_interface=raw.board_interface,
        board_address=raw.board_address,
        peer=raw.peer,
        peer_interface=raw.peer_interface,
        peer_address=raw.peer_address,
        adapter=raw.adapter,
        speed_mbps=raw.speed_mbps,
        mtu=raw.mtu,
        board_irqs=raw.board_irqs,
        peer_irqs=raw.peer_irqs,
        bus=raw.bus or "",
    )


def _ssh_settings(ssh: SshSection, source: Path) -> SshSettings:
    """``pinet.ssh``: the pinned known_hosts, the lab's own key (optional: without it the
    agent, ``~/.ssh`` keys and the ssh_config's IdentityFile are tried) and the ssh_config to
    follow (``config: none`` for none; default ``~/.ssh/config`` when there is one)."""
    known_hosts = _path(ssh.known_hosts, source, "pinet.ssh.known_hosts")
    identity = _path(ssh.identity, source, "pinet.ssh.identity") if ssh.identity is not None else None
    if ssh.config is None:
        default = USER_SSH_CONFIG.expanduser()
        return SshSettings(identity, known_hosts, default if default.is_file() else None)
    if ssh.config == "none":
        return SshSettings(identity, known_hosts, None)
    return SshSettings(identity, known_hosts, _path(ssh.config, source, "pinet.ssh.config"))


def _turn_file(value: str | None, source: Path) -> Path | None:
    """``pinet.traffic_turn``: a lock file made on first use, relative to the env file; its
    folder must exist, or every measurement would end in a lab fault instead of this error."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = source.parent / path
    if not _checked(path.parent, Path.is_dir, source, "pinet.traffic_turn"):
        raise ConfigError(str(source), f"pinet.traffic_turn: folder {path.parent} does not exist")
    return path


def _checked(path: Path, test: Callable[[Path], bool], source: Path, key: str) -> bool:
    """``test(path)``, with a name the system refuses (too long: ``is_file`` raises rather
    than answering False on Python 3.11) reported as the env file's error, not a traceback."""
    try:
        return test(path)
    except OSError as exc:
        raise ConfigError(
            str(source), f"{key}: {str(path)[:200]} cannot be looked up ({exc.strerror})"
        ) from None


def _path(value: str, source: Path, key: str) -> Path:
    """A file the env file names, relative to the env file (``~`` is the user's home); it must
    exist (host keys are pinned)."""
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = source.parent / path
    if not _checked(path, Path.is_file, source, key):
        raise ConfigError(str(source), f"{key}: {path} does not exist")
    return path
