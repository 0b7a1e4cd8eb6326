"""A twin host's systemd-networkd files, applied as systemd-networkd does at boot.

hardware-lab.md tells a lab to give each host's test-link interface its address and MTU in a
``.network`` file.  The rehearsal writes the page's files where each twin host's
systemd-networkd would read them and applies them as it does at boot: a namespace host's
under the twin's folder (``ip`` in its namespace), the QEMU board's in its own
``/etc/systemd/network``, typed at its console.
"""

from __future__ import annotations

import re
import shlex

from ..errors import PinetError
from . import twin_console, virtual_lab
from .twin import Twin, console_line, qemu_host

NETWORKD = re.compile(r"^\[(\w+)\]\s*$")


def read_networkd(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd-networkd ``.network`` file as sections of keys, each key's values in order."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = NETWORKD.match(line)
        if header:
            current = sections.setdefault(header.group(1), {})
            continue
        key, sep, value = line.partition("=")
        if current is None or not sep:
            raise PinetError(f"networkd file: cannot read {raw!r}")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def networkd_ip(name: str, text: str) -> tuple[str, list[list[str]]]:
    """What systemd-networkd does at boot with one ``.network`` file, as ``ip`` arguments:
    the matched interface gets its MTU and addresses and comes up.  Also the line that says so."""
    sections = read_networkd(text)
    names = sections.get("Match", {}).get("Name", [])
    if len(names) != 1:
        raise PinetError(f"{name}: [Match] Name= must name one interface")
    device = names[0]
    addresses = sections.get("Network", {}).get("Address", [])
    commands = [["link", "set", device, "mtu", mtu] for mtu in sections.get("Link", {}).get("MTUBytes", [])]
    commands += [["addr", "replace", address, "dev", device] for address in addresses]
    commands.append(["link", "set", device, "up"])
    return f"{device} {' '.join(addresses)}", commands


def install_networkd(twin: Twin, host: str, files: dict[str, str]) -> list[str]:
    """The host's ``.network`` files (by name) written where systemd-networkd reads them and
    applied as it does at boot; what was applied, one line per file.

    A namespace host's ``/etc/systemd/network`` is the twin's folder for it; the QEMU board's
    is its own, written and applied at its console (its image gave it the same addresses at
    boot: a lab's flashed image carries them, so this changes nothing but the files)."""
    applied = []
    if host == qemu_host(twin.spec):
        line = console_line(twin, host)
        with twin_console.console_shell(host, line.address, line.port, line.protocol) as shell:
            for name, text in sorted(files.items()):
                twin_console.write_file(shell, host, f"/etc/systemd/network/{name}", text)
                said, commands = networkd_ip(name, text)
                twin_console.run(shell, host, " && ".join(shlex.join(["ip", *c]) for c in commands))
                applied.append(f"{host}: {said}")
        return applied
    folder = twin.networkd_dir(host)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        (folder / name).write_text(text, encoding="utf-8")
        said, commands = networkd_ip(name, text)
        for command in commands:
            virtual_lab.run_ip(*command, netns=twin.spec.netns(host))
        applied.append(f"{host}: {said}")
    return applied
