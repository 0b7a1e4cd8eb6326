"""Offer virtual places through a labgrid coordinator, as a hardware lab offers its boards.

For each built place ``pinetN`` this writes

- ``exporter.yaml``: one exporter group per place holding a ``NetworkService`` per host,
  named after the host (``labgrid-exporter`` publishes them to the coordinator);
- ``places/pinetN.yaml``: the env file a test run uses once it holds the place: every target is a
  ``RemotePlace`` (labgrid refuses it unless this user acquired the place), power stays an
  ``ExternalPowerDriver`` run on this machine, and the ``pinet:`` section is the place's own;

and, given a coordinator, creates the places there with their matches and tags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import PinetError
from ..lab.coordinator import Client
from .topology import LabSpec

DEFAULT_TAGS = ("pinet=virtual", "board=netns")


def exporter_config(specs: list[LabSpec]) -> dict[str, Any]:
    """The exporter's groups: place name -> {host: NetworkService}."""
    groups: dict[str, Any] = {}
    for spec in specs:
        group: dict[str, Any] = {"location": f"virtual place {spec.name} on this machine"}
        for host in spec.hosts:
            group[host.name] = {
                "cls": "NetworkService",
                "address": spec.mgmt_address(host.name),
                "username": "root",
                "port": 22,
            }
        groups[spec.name] = group
    return groups


def remote_env(spec: LabSpec) -> dict[str, Any]:
    """The place's env file with every target's resources replaced by its RemotePlace."""
    if spec.is_qemu:
        raise PinetError(f"{spec.name}: a QEMU board runs in the test process's labgrid; export netns places")
    try:
        local = yaml.safe_load(spec.env_file.read_text(encoding="utf-8"))
    except OSError:
        raise PinetError(f"{spec.name} is not up: run `pinet lab up --places K` first") from None
    for target in local["targets"].values():
        target["resources"] = {"RemotePlace": {"name": spec.name}}
    return dict(local)


def write_export(specs: list[LabSpec], out: Path) -> list[Path]:
    """Write ``out/exporter.yaml`` and one env file per place into ``out/places`` (the
    directory --pinet-lab takes); return what was written."""
    (out / "places").mkdir(parents=True, exist_ok=True)
    written = [out / "exporter.yaml"]
    # labgrid renders exporter files with Jinja2 first: plain YAML without '#' lines is safe.
    written[0].write_text(yaml.safe_dump(exporter_config(specs), sort_keys=False), encoding="utf-8")
    for spec in specs:
        path = out / "places" / f"{spec.name}.yaml"
        path.write_text(yaml.safe_dump(remote_env(spec), sort_keys=False), encoding="utf-8")
        written.append(path)
    return written


def register_places(client: Client, specs: list[LabSpec], exporter: str, tags: tuple[str, ...]) -> None:
    """Create each place on the coordinator (idempotent), match its group, set its tags."""
    existing = set(client.run(["places"], check=False).split())
    for spec in specs:
        if spec.name not in existing:
            client.run(["-p", spec.name, "create"])
        show = client.run(["-p", spec.name, "show"], check=False)
        match = f"{exporter}/{spec.name}/NetworkService/*"
        if match not in show:
            client.run(["-p", spec.name, "add-match", match])
        client.run(["-p", spec.name, "set-tags", *tags, f"place={spec.name}"])
