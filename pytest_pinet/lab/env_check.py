"""Validate a lab env file without touching hardware: pinet's section and labgrid's targets.

labgrid only warns about a misspelled driver argument and accepts unknown keys silently;
a nightly run should not discover that at 3 a.m.  ``pinet lab check`` builds every target
(resources and drivers, never activated) and turns each warning into an error naming the
file and the target.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import warnings
from pathlib import Path

from ..errors import ConfigError
from ..yaml_text import load_yaml
from .inventory import Inventory, load_inventory

# The host key types OpenSSH writes to known_hosts, and the length of an ed25519 key.
HOST_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
ED25519_KEY_BYTES = 32
# What an example's placeholder key is typed of (the base64 text of a real key is random).
PLACEHOLDER_WORDS = re.compile(r"(?i)example|replace|placeholder|changeme|yourkey")


def _key_blob_problem(key_type: str, text: str) -> str:
    """Why ``text`` is not the base64 of an SSH public key of ``key_type`` ("" when it is)."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return "its key is not base64"
    if len(blob) < 4:
        return "its key is too short"
    (length,) = struct.unpack(">I", blob[:4])
    if blob[4 : 4 + length] != key_type.encode():
        return f"its key does not begin with its type {key_type}"
    if key_type == "ssh-ed25519":
        rest = blob[4 + length :]
        if len(rest) != 4 + ED25519_KEY_BYTES or struct.unpack(">I", rest[:4])[0] != ED25519_KEY_BYTES:
            return "its ed25519 key is not 32 bytes"
    words = PLACEHOLDER_WORDS.findall(text)
    if words:
        # A word of seven letters turns up in a real key's base64 once in 10^12: it was typed.
        return f"its key spells {words[0]!r}: a placeholder, not the host's key"
    return ""


def known_hosts_problems(path: Path) -> list[str]:
    """Every line of a known_hosts file that is not a host and a valid public key: a copied
    example (placeholder keys) would otherwise fail only when the night first connects."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot read it ({exc})"]
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0].startswith("@"):  # @cert-authority / @revoked
            words = words[1:]
        if len(words) < 3 or words[1] not in HOST_KEY_TYPES:
            found.append(f"{path}:{number}: not 'HOST KEYTYPE KEY' with a known key type")
            continue
        why = _key_blob_problem(words[1], words[2])
        if why:
            found.append(
                f"{path}:{number}: {words[0]} {words[1]}: {why} (a placeholder? ssh-keyscan the host)"
            )
    return found


def identity_problem(path: Path) -> str:
    """Why ``path`` is not a private key file ("" when it looks like one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot read it ({exc})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not (lines[0].startswith("-----BEGIN ") and lines[0].endswith("PRIVATE KEY-----")):
        first = lines[0][:60] if lines else "an empty file"
        return (
            f"{path}: not a private key (it begins with {first!r}): "
            "put the lab's key there (ssh-keygen -t ed25519)"
        )
    # A legacy PEM key may carry headers (Proc-Type, DEK-Info) before its base64.
    body = [line for line in lines[1:-1] if ":" not in line]
    try:
        base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError):
        return f"{path}: its key is not base64: a damaged or placeholder key"
    return ""


def ssh_file_problems(inventory: Inventory) -> list[str]:
    """The pinned known_hosts and the lab's own key, as a connection would need them."""
    found = []
    ssh_files = {(h.endpoint.known_hosts, h.endpoint.identity) for h in inventory.hosts.values()}
    for known_hosts in sorted({k for k, _ in ssh_files}):
        found += known_hosts_problems(known_hosts)
    for identity in sorted({i for _, i in ssh_files if i is not None}):
        why = identity_problem(identity)
        if why:
            found.append(why)
    return found


def root_warnings(inventory: Inventory) -> list[str]:
    """Hosts whose role needs root (a peer sets host routes for routing; every board and peer
    lets the health check renegotiate its link) but that log in as an ordinary user with no
    ``become: sudo``: what cannot run there, before a night finds out."""
    routed_peers = {peer for route in inventory.routes for peer in (route.wan.peer, route.lan.peer)}
    found = []
    for host in inventory.hosts.values():
        if host.endpoint.username == "root" or host.become == "sudo":
            continue
        what = ["the health check cannot renegotiate its links (ethtool -r)"]
        if host.name in routed_peers:
            what.insert(0, "routing cannot run (its host routes need root)")
        if host.role == "board":
            what.insert(0, "its tuning profiles, qdiscs and forwarding cannot be set")
        found.append(
            f"{host.name} logs in as {host.endpoint.username} without become: sudo: {'; '.join(what)} "
            "(add become: sudo in pinet.hosts, and the sudoers lines of docs/hardware-lab.md)"
        )
    return found


def remote_places(path: str | Path) -> dict[str, str]:
    """The targets of env file ``path`` whose resources are a labgrid place (``RemotePlace``),
    each with the place's name: their resources come from the coordinator."""
    import yaml

    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}  # load_inventory has said what is wrong with the file
    found = {}
    for name, target in ((data or {}).get("targets") or {}).items():
        resources = (target or {}).get("resources") or {}
        entries = resources if isinstance(resources, list) else [resources]
        for entry in entries:
            place = entry.get("RemotePlace") if isinstance(entry, dict) else None
            if isinstance(place, dict) and place.get("name"):
                found[str(name)] = str(place["name"])
    return found


def _check_places(places: list[str], coordinator: str, source: str) -> None:
    """Each of ``places`` exists on ``coordinator``, or a ConfigError names the one missing."""
    from ..errors import LabFault
    from .coordinator import Client

    client = Client(coordinator, patience=10.0)
    for place in places:
        try:
            client.run(["-p", place, "show"], timeout=30.0)
        except LabFault as fault:
            raise ConfigError(
                source,
                f"place {place} is not to be had from coordinator {coordinator}: {fault}",
                f"create it there (labgrid-client -x {coordinator} -p {place} create; add-match)",
            ) from None


def check_env_file(path: str | Path, coordinator: str | None = None) -> Inventory:
    """Validate ``path`` completely; return the inventory or raise ConfigError.

    A target whose resources are a coordinator's place is not built: labgrid builds it only
    for the user holding the place, and a check must not take a board from a developer. With
    ``coordinator`` (HOST:PORT) the place must exist there; without it, that is left to the
    night (the CLI says so)."""
    inventory = load_inventory(path)
    remote = remote_places(path)
    if coordinator is not None:
        _check_places(sorted(set(remote.values())), coordinator, str(path))
    from labgrid import Environment
    from labgrid.exceptions import InvalidConfigError, NoConfigFoundError

    source = str(path)
    try:
        env = Environment(config_file=str(path))
    except (InvalidConfigError, NoConfigFoundError) as exc:
        raise ConfigError(source, f"labgrid rejects it: {getattr(exc, 'msg', exc)}") from None
    problems = ssh_file_problems(inventory)
    if problems:
        raise ConfigError(
            source, "; ".join(problems), "a copied example needs the lab's own key and host keys"
        )
    for name in env.config.get_targets():
        if name in remote:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                env.get_target(name)
            except InvalidConfigError as exc:
                cause = f": {exc.__cause__}" if exc.__cause__ else ""
                raise ConfigError(
                    source, f"targets.{name}: {str(getattr(exc, 'msg', exc)).strip()}{cause}"
                ) from None
            except Exception as exc:  # noqa: BLE001 - a driver that needs an optional module, e.g. pysnmp
                raise ConfigError(source, f"targets.{name}: {type(exc).__name__}: {exc}") from None
        for warning in caught:
            # A library's own deprecation (pysnmp imports asyncore) says nothing of the file.
            if issubclass(warning.category, DeprecationWarning):
                continue
            raise ConfigError(source, f"targets.{name}: {warning.message}", "remove or fix the attribute")
    return inventory
