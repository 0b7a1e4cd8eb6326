"""The two-board lab's env file: the namespace lab's and its QEMU companion's, as one lab.

The default lab is two labs built side by side (:func:`topology.parts`): each keeps its own
namespaces, bridge, addresses and env file, so ``up``, ``down`` and power work on each as
they always did.  What a test run reads is one env file with both boards, written here from
the two: the companion's peers, links, route and disk renamed (``COMPANION_NAMES``) so that
every name is unique, one client key for all hosts (the companion is built with the namespace
lab's) and one known_hosts pinning every host key of both.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from ..yaml_text import load_yaml
from .topology import COMPANION_NAMES, QEMU_BOARD, LabSpec, parts

KNOWN_HOSTS = "two-boards-known_hosts"
# What the QEMU board needs of this machine, and the Debian package of each.
QEMU_TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "mmdebstrap": "mmdebstrap"}


def _renamed(name: str) -> str:
    return COMPANION_NAMES.get(name, name)


def _companion_pinet(section: dict[str, Any]) -> dict[str, Any]:
    """The companion's ``pinet`` section under the two-board lab's names."""
    renames = {"board": _renamed, "peer": _renamed, "name": _renamed, "host": _renamed}
    renames |= {"lan": _renamed, "wan": _renamed}
    return {
        "hosts": {_renamed(name): host for name, host in section.get("hosts", {}).items()},
        **{
            key: [
                {k: renames[k](v) if k in renames else v for k, v in item.items()}
                for item in section.get(key, [])
            ]
            for key in ("links", "routes", "disks")
        },
    }


def merged_env(pair: LabSpec, netns_env: dict[str, Any], qemu_env: dict[str, Any]) -> dict[str, Any]:
    """One env of both boards from the two labs' own (as written by ``envfile``)."""
    ours, theirs = netns_env["pinet"], _companion_pinet(qemu_env["pinet"])
    targets = dict(netns_env["targets"])
    targets |= {_renamed(name): target for name, target in qemu_env["targets"].items()}
    sections = {key: value for key, value in qemu_env.items() if key not in ("targets", "pinet")}
    sections |= {key: value for key, value in netns_env.items() if key not in ("targets", "pinet")}
    pinet = {
        **ours,
        "lab": pair.name,
        "ssh": {**ours["ssh"], "known_hosts": str(pair.state_dir / KNOWN_HOSTS)},
        "hosts": {**ours["hosts"], **theirs["hosts"]},
        **{key: ours.get(key, []) + theirs[key] for key in ("links", "routes", "disks")},
    }
    if "images" in qemu_env["pinet"]:  # the QEMU board's OS images (--pinet-image, pinet bisect)
        pinet["images"] = qemu_env["pinet"]["images"]
    return {"targets": targets, **sections, "pinet": pinet}


def qemu_missing() -> str:
    """Why this machine cannot run the QEMU board ("" when it can): a missing tool, named with
    the package that brings it."""
    for tool, package in QEMU_TOOLS.items():
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt install {package}; scripts/setup.sh installs it)"
    return ""


def write_pair_env(pair: LabSpec, absent: str = "") -> Path:
    """Write the two-board env file (and its known_hosts) from the two labs' own files; with
    ``absent`` (why the QEMU board could not be built) the namespace board's alone, saying so."""
    netns, qemu = parts(pair)
    built = (netns,) if absent else (netns, qemu)
    envs = [load_yaml(spec.env_file.read_text(encoding="utf-8")) for spec in built]
    known = "".join((spec.state_dir / "known_hosts").read_text(encoding="utf-8") for spec in built)
    (pair.state_dir / KNOWN_HOSTS).write_text(known, encoding="utf-8")
    if absent:
        data = envs[0]
        data["pinet"] = {
            **data["pinet"],
            "ssh": {**data["pinet"]["ssh"], "known_hosts": str(pair.state_dir / KNOWN_HOSTS)},
            "absent": {_renamed(name): absent for name in (QEMU_BOARD, *[link.name for link in qemu.links])},
        }
        pair.env_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return pair.env_file
    header = (
        f"# labgrid environment of the two-board virtual lab {pair.name} (boards pi and qpi),\n"
        f"# written by `pinet lab up` from {netns.env_file} and {qemu.env_file}.\n"
        "# Removed by `pinet lab down`; pass it to pytest with --pinet-lab.\n"
    )
    text = header + yaml.safe_dump(merged_env(pair, envs[0], envs[1]), sort_keys=False)
    pair.env_file.write_text(text, encoding="utf-8")
    return pair.env_file
