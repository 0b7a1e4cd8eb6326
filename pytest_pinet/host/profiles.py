"""Named tuning profiles (lab/profiles.yaml): which tunables each role gets.

The seed measured the same board under ``stock``, ``irq-pinned`` and ``irq-pinned-rps-xps``;
a profile names such a set once, and tests are parametrized over profile names.  Interface
names may be the literal ``link``: the interface of the link under test on that host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, Unsupported
from ..model.lab import LinkEntry
from .cpu_tunables import FixedClock, Governor, IrqAffinity, QueueMask
from .net_tunables import Mtu, Offloads, Qdisc, Sysctl
from .remote import RemoteHost
from .shell import INTERFACE_NAME
from .tunables import Tunable, apply_checked

ROLES = ("board", "peer")
TUNABLE_KEYS = frozenset(
    {"irq_affinity", "rps", "xps", "governor", "cpu_mhz", "qdisc", "ip_forward", "mtu", "offloads", "sysctl"}
)
LINK = "link"


@dataclass(frozen=True)
class Profile:
    """One named profile: tunable settings per role, as validated data."""

    name: str
    why: str
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def tunables(self, role: str, link: LinkEntry) -> list[Tunable]:
        """Concrete tunables for ``role`` on ``link`` (``link`` interface names resolved)."""
        here = link.board_interface if role == "board" else link.peer_interface
        made: list[Tunable] = []

        def iface(name: str) -> str:
            return here if name == LINK else name

        for key, value in self.settings.get(role, {}).items():
            if key == "irq_affinity":
                made += [IrqAffinity(iface(n), tuple(cpus)) for n, cpus in value.items()]
            elif key in ("rps", "xps"):
                made += [
                    QueueMask(key, iface(n), "all" if c == "all" else tuple(c)) for n, c in value.items()
                ]
            elif key == "governor":
                made.append(Governor(value))
            elif key == "cpu_mhz":
                made.append(FixedClock(value))
            elif key == "qdisc":
                made += [Qdisc(iface(n), tuple(str(spec).split())) for n, spec in value.items()]
            elif key == "ip_forward":
                made.append(Sysctl("net.ipv4.ip_forward", "1" if value else "0"))
            elif key == "mtu":
                made += [Mtu(iface(n), m) for n, m in value.items()]
            elif key == "offloads":
                made += [Offloads(iface(n), dict(f)) for n, f in value.items()]
            elif key == "sysctl":
                made += [Sysctl(k, str(v)) for k, v in value.items()]
        return made


@dataclass(eq=False)
class AppliedProfile:
    """A profile in force on the hosts; ``restore`` puts every host back as found."""

    profile: Profile
    applied: list[tuple[Tunable, RemoteHost, Any]] = field(default_factory=list)

    def reapply(self) -> list[str]:
        """Apply every tunable again after a power-cycle wiped it, keeping the state saved
        before the first apply (what ``restore`` must put back); return what it did."""
        done = []
        for tunable, host, _saved in self.applied:
            if not tunable.is_applied(host):
                tunable.apply(host)
                done.append(f"{host.name}: {tunable.describe()}")
        return done

    def restore(self) -> list[str]:
        """Restore in reverse order; return problems (a restore must not hide results)."""
        problems = []
        for tunable, host, saved in reversed(self.applied):
            try:
                tunable.restore(host, saved)
            except Exception as exc:  # noqa: BLE001 - report every restore failure, then continue
                problems.append(f"{host.name}: restoring {tunable.describe()}: {exc}")
        self.applied.clear()
        return problems

    def describe(self) -> list[str]:
        """What is in force, host by host."""
        return [f"{host.name}: {tunable.describe()}" for tunable, host, _ in self.applied]


def apply_profile(profile: Profile, hosts: Mapping[str, RemoteHost], link: LinkEntry) -> AppliedProfile:
    """Apply ``profile`` to ``hosts`` (role -> host); on Unsupported undo everything and raise."""
    steps = [
        (tunable, hosts[role]) for role in ROLES if role in hosts for tunable in profile.tunables(role, link)
    ]
    return apply_steps(profile, steps)


def apply_steps(profile: Profile, steps: list[tuple[Tunable, RemoteHost]]) -> AppliedProfile:
    """Apply tunables host by host, in order; on Unsupported undo what was done and raise."""
    applied = AppliedProfile(profile)
    for tunable, host in steps:
        try:
            saved = apply_checked(tunable, host)
        except Unsupported:
            applied.restore()
            raise
        except BaseException:
            applied.restore()  # a lab fault half-way must not leave a host half-provisioned
            raise
        applied.applied.append((tunable, host, saved))
    return applied


def load_profiles(path: str | Path) -> dict[str, Profile]:
    """Read and validate a profiles file; errors name the file, the profile and the key."""
    source = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(source, f"cannot read profiles file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(source, f"not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(source, f"malformed YAML{where}", "fix the syntax") from None
    return profiles_from_data(data, source)


def profiles_from_data(data: Any, source: str) -> dict[str, Profile]:
    """Validate decoded profiles data."""
    if not isinstance(data, Mapping) or not isinstance(data.get("profiles"), Mapping):
        raise ConfigError(source, "expected a mapping with a 'profiles' mapping")
    unknown = set(data) - {"version", "profiles"}
    if unknown:
        raise ConfigError(
            source, f"unknown top-level keys {sorted(unknown, key=str)}", "allowed: version, profiles"
        )
    profiles = {}
    for name, raw in data["profiles"].items():
        where = f"profiles.{name}"
        if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(source, f"{where}: profile names are letters, digits, - and _")
        raw = raw or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(source, f"{where} must be a mapping")
        extra = set(raw) - {"why", *ROLES}
        if extra:
            raise ConfigError(
                source, f"{where}: unknown keys {sorted(extra, key=str)}", "allowed: why, board, peer"
            )
        settings = {}
        for role in ROLES:
            if role in raw:
                settings[role] = _role_settings(raw[role] or {}, f"{where}.{role}", source)
        profile = Profile(name, str(raw.get("why", "")), settings)
        # Build once with a dummy link so every value is checked by the tunables themselves.
        dummy = LinkEntry("check", "b", "eth0", "10.0.0.1", "p", "eth0", "10.0.0.2", "x", 1000, 1500)
        for role in settings:
            try:
                profile.tunables(role, dummy)
            except (ValueError, TypeError) as exc:
                raise ConfigError(source, f"{where}.{role}: {exc}") from None
        profiles[name] = profile
    return profiles


def _role_settings(raw: Any, where: str, source: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(source, f"{where} must be a mapping of tunables")
    unknown = set(raw) - TUNABLE_KEYS
    if unknown:
        raise ConfigError(
            source, f"{where}: unknown tunables {sorted(unknown, key=str)}", f"known: {sorted(TUNABLE_KEYS)}"
        )
    for key, value in raw.items():
        _check_value(key, value, f"{where}.{key}", source)
    return dict(raw)


def _check_value(key: str, value: Any, where: str, source: str) -> None:
    per_interface = {"irq_affinity", "rps", "xps", "qdisc", "mtu", "offloads"}
    if key in per_interface:
        if not isinstance(value, Mapping) or not value:
            raise ConfigError(source, f"{where} must map interface names (or 'link') to values")
        for name, item in value.items():
            if not isinstance(name, str) or not (name == LINK or INTERFACE_NAME.match(name)):
                raise ConfigError(source, f"{where}: {name!r} is not an interface name")
            if key in ("irq_affinity", "rps", "xps") and item != "all":
                if key == "irq_affinity" and item == "all":
                    continue
                if (
                    not isinstance(item, list)
                    or not item
                    or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1024 for c in item)
                ):
                    raise ConfigError(
                        source,
                        f"{where}.{name} must be a list of CPU numbers"
                        + ("" if key == "irq_affinity" else " or 'all'"),
                    )
            if key == "mtu" and (
                isinstance(item, bool) or not isinstance(item, int) or not 68 <= item <= 65535
            ):
                raise ConfigError(source, f"{where}.{name} must be an MTU 68..65535")
            if key == "offloads" and (
                not isinstance(item, Mapping) or not all(isinstance(v, bool) for v in item.values())
            ):
                raise ConfigError(source, f"{where}.{name} must map offload names to true/false")
            if key == "qdisc" and not isinstance(item, str):
                raise ConfigError(source, f"{where}.{name} must be a qdisc spec like 'sfq quantum 1500'")
    elif key == "governor" and not isinstance(value, str):
        raise ConfigError(source, f"{where} must be a governor name")
    elif key == "cpu_mhz" and (
        isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 10000
    ):
        raise ConfigError(source, f"{where} must be MHz 100..10000")
    elif key == "ip_forward" and not isinstance(value, bool):
        raise ConfigError(source, f"{where} must be true or false")
    elif key == "sysctl" and (
        not isinstance(value, Mapping) or not all(isinstance(v, str | int) for v in value.values())
    ):
        raise ConfigError(source, f"{where} must map sysctl keys to values")
