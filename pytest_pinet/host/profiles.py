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
from ..yaml_text import load_yaml
from .cpu_tunables import FixedClock, Governor, IrqAffinity, QueueMask
from .net_tunables import Mtu, Offloads, Qdisc, Sysctl
from .remote import RemoteHost
from .tunables import Tunable, apply_checked, known_unsupported

ROLES = ("board", "peer")
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
                named = link.board_irqs if role == "board" else link.peer_irqs
                made += [
                    IrqAffinity(iface(n), tuple(cpus), named if n == LINK else ())
                    for n, cpus in value.items()
                ]
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
            if host.silent is not None:
                # A hung board's restores each waited 10 s for nothing (18 s after one hang):
                # its power-cycle wipes them anyway, and the lab fault is already recorded.
                problems.append(f"{host.name}: {tunable.describe()} not restored: {host.silent}")
                continue
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
    """Apply tunables host by host, in order; on Unsupported undo what was done and raise.

    A step a host was found not to take earlier this session fails the profile before any
    step is applied: nothing to undo, no commands to a board that said no already."""
    for tunable, host in steps:
        known = known_unsupported(tunable, host)
        if known is not None:
            raise known
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
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
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
    """Validate decoded profiles data against the declared schema, then by the tunables themselves."""
    # Imported here, when a file is read: the schema library must not cost a pytest run that
    # never loads a profiles file anything at plugin import (issue 27).
    from ..schema.convert import ABSENT
    from .profiles_schema import read_profiles_file

    profiles = {}
    for name, parsed in read_profiles_file(data, source).profiles.items():
        where = f"profiles.{name}"
        settings: dict[str, Mapping[str, Any]] = {}
        for role in ROLES if parsed is not None else ():
            tunables = getattr(parsed, role)
            if tunables is not ABSENT:
                # In the file's order: tunables are applied in it (and restored in reverse).
                written = data["profiles"][name][role] or {}
                settings[role] = {key: getattr(tunables, key) for key in written}
        profile = Profile(name, parsed.why if parsed is not None else "", settings)
        # Build once with a dummy link so every value is checked by the tunables themselves.
        dummy = LinkEntry("check", "b", "eth0", "10.0.0.1", "p", "eth0", "10.0.0.2", "x", 1000, 1500)
        for role in settings:
            try:
                profile.tunables(role, dummy)
            except (ValueError, TypeError) as exc:
                raise ConfigError(source, f"{where}.{role}: {exc}") from None
        profiles[name] = profile
    return profiles
