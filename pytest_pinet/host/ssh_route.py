"""How a host is reached over SSH when the env leaves it to the user's own SSH setup.

labgrid users already reach their boards with OpenSSH: keys in an agent or in ``~/.ssh``,
and an ``ssh_config`` with Host aliases and a ``ProxyJump`` through a lab gateway.  pinet
reads the same ``ssh_config`` (paramiko's parser) and follows it the way labgrid's SSHDriver
does: the env's NetworkService ``username`` and ``port`` are always used for the host itself
(labgrid passes ``-l`` and ``-p``), while ``HostName``, ``IdentityFile``, ``IdentitiesOnly``
and ``ProxyJump`` come from the config; a jump host takes its ``User``, ``Port``,
``HostName`` and ``IdentityFile`` from its own Host block.  Host keys are not the config's
business: every hop is checked against the lab's pinned known_hosts (see :mod:`.remote`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from paramiko.config import SSHConfig

HOP = re.compile(
    r"^(?:(?P<user>[A-Za-z0-9_.-]{1,32})@)?(?P<host>[A-Za-z0-9_.-]{1,253})(?::(?P<port>\d{1,5}))?$"
)
# ssh_config words pinet does not follow: refused by name rather than silently ignored,
# because each changes which machine or through what a connection goes.
UNFOLLOWED = ("proxycommand",)


@dataclass(frozen=True)
class Hop:
    """One SSH connection to make: where, as whom, with which key files."""

    host: str  # what is dialled and what the pinned known_hosts must name
    port: int
    user: str
    identities: tuple[str, ...] = ()
    # IdentitiesOnly yes: only the key files named, neither the agent nor ~/.ssh/id_*.
    identities_only: bool = False

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


@dataclass(frozen=True)
class Route:
    """The connection to a host and the jump hosts in front of it, first dialled first."""

    target: Hop
    jumps: tuple[Hop, ...] = ()


def read_config(path: Path | None) -> SSHConfig:
    """Parse an ssh_config; ``None`` gives an empty one.  Errors name the file.

    paramiko is imported here, not with the module: a run that never opens SSH (collection,
    ``pinet lab check`` of a file without ssh_config) does not pay for it.
    """
    from paramiko.config import SSHConfig

    if path is None:
        return SSHConfig()
    try:
        return SSHConfig.from_path(str(path))
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read ssh_config: {exc.strerror}") from None
    except Exception as exc:  # noqa: BLE001 - paramiko: ConfigParseError, ValueError on bad lines, ...
        raise ConfigError(str(path), f"not a valid ssh_config: {exc}") from None


def resolve(address: str, user: str, port: int, config: SSHConfig, where: str) -> Route:
    """The route to ``address`` (an IP address, a host name or a Host alias of ``config``).

    ``where`` names the config file in errors.
    """
    found = config.lookup(address)
    _refuse_unfollowed(found, address, where)
    target = Hop(
        str(found.get("hostname", address)), port, user, _identities(found), _yes(found, "identitiesonly")
    )
    jumps = str(found.get("proxyjump", "none"))
    if jumps.lower() == "none":
        return Route(target)
    return Route(target, tuple(_hop(spec.strip(), config, where, address) for spec in jumps.split(",")))


def _hop(spec: str, config: SSHConfig, where: str, for_host: str) -> Hop:
    matched = HOP.match(spec)
    if matched is None:
        raise ConfigError(where, f"Host {for_host}: ProxyJump {spec!r} is not [user@]host[:port]")
    name = matched["host"]
    found = config.lookup(name)
    _refuse_unfollowed(found, name, where)
    if str(found.get("proxyjump", "none")).lower() != "none":
        raise ConfigError(
            where,
            f"Host {name}: a jump host with a ProxyJump of its own is not followed",
            f"list every hop in order on Host {for_host}: ProxyJump first,second",
        )
    port_text = matched["port"] or found.get("port", "22")
    port = int(port_text) if str(port_text).isdigit() else 0
    if not 0 < port < 65536:
        raise ConfigError(where, f"Host {name}: port {port_text!r} is not 1..65535")
    user = matched["user"] or str(found.get("user", ""))
    if not user:
        raise ConfigError(
            where,
            f"Host {for_host}: jump host {name} has no user",
            f"write ProxyJump user@{name}, or User in a Host {name} block",
        )
    host = str(found.get("hostname", name))
    return Hop(host, port, user, _identities(found), _yes(found, "identitiesonly"))


def _refuse_unfollowed(found: Any, name: str, where: str) -> None:
    for word in UNFOLLOWED:
        if word in found and str(found[word]).lower() != "none":  # "none": OpenSSH's off
            raise ConfigError(
                where, f"Host {name}: {word} is not followed by pinet", "reach the host with ProxyJump"
            )


def _identities(found: Any) -> tuple[str, ...]:
    """IdentityFile entries that exist (OpenSSH, too, skips a missing one)."""
    files = (Path(str(name)).expanduser() for name in found.get("identityfile", []))
    return tuple(str(path) for path in files if path.is_file())


def _yes(found: Any, key: str) -> bool:
    return str(found.get(key, "no")).lower() == "yes"


def auth_kwargs(
    hop: Hop, lab_identity: Path | None, password: str | None, *, jump: bool = False
) -> dict[str, Any]:
    """paramiko's connect() arguments for authenticating ``hop``.

    The env's ``identity`` (the lab's own key) is the only key tried for a lab host, as
    before; without it a host is tried as OpenSSH would: its IdentityFile, then the agent
    and ``~/.ssh/id_*`` unless IdentitiesOnly.  A jump host is the user's own gateway: it is
    offered the lab key too, but never loses the agent for it.  A password, when the env
    gives one, last.
    """
    if lab_identity is not None and not jump:
        keys, own_keys_only = [str(lab_identity)], True
    else:
        lab_key = [str(lab_identity)] if lab_identity is not None else []
        keys, own_keys_only = [*lab_key, *hop.identities], hop.identities_only
    kwargs: dict[str, Any] = {
        "key_filename": keys,
        "allow_agent": not own_keys_only,
        "look_for_keys": not own_keys_only,
    }
    if password:
        kwargs["password"] = password
    return kwargs


def how_reached(endpoint: Any) -> str:
    """One line for ``pinet lab check``: which key, which ssh_config, through which jumps."""
    keys = f"key {endpoint.identity}" if endpoint.identity else "agent or ~/.ssh keys"
    if endpoint.ssh_config is None or not endpoint.address:
        return keys
    route = resolve(
        endpoint.address,
        endpoint.username,
        endpoint.port,
        read_config(endpoint.ssh_config),
        str(endpoint.ssh_config),
    )
    target = route.target
    via = f" via {', '.join(str(hop) for hop in route.jumps)}" if route.jumps else ""
    named = f" as {target.host}" if target.host != endpoint.address else ""
    return f"{keys}, ssh_config {endpoint.ssh_config}{named}{via}"
