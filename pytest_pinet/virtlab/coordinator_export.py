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

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ..errors import PinetError
from ..lab.coordinator import Client
from ..yaml_text import load_yaml
from .topology import LabSpec

DEFAULT_TAGS = ("pinet=virtual", "board=netns")


def place_group(spec: LabSpec, location: str) -> dict[str, Any]:
    """One place's exporter group: a NetworkService per host of the virtual lab (what a
    hardware lab's exporter publishes for a board and its peers); the rack adds its power
    ports, console and SD card to it."""
    group: dict[str, Any] = {"location": location}
    for host in spec.hosts:
        group[host.name] = {
            "cls": "NetworkService",
            "address": spec.mgmt_address(host.name),
            "username": "root",
            "port": 22,
        }
    return group


def env_through_place(spec: LabSpec, hint: str) -> dict[str, Any]:
    """The lab's env file with every target's resources replaced by the place's RemotePlace
    (its drivers kept; the rack replaces them too); ``hint`` says how to bring the lab up."""
    try:
        local = load_yaml(spec.env_file.read_text(encoding="utf-8"))
    except OSError:
        raise PinetError(f"{spec.name} is not up: run `{hint}` first") from None
    for target in local["targets"].values():
        target["resources"] = {"RemotePlace": {"name": spec.name}}
    return dict(local)


def exporter_config(
    specs: list[LabSpec],
    location: str = "virtual place {name} on this machine",
    resources: Callable[[LabSpec], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The exporter's groups, the one way every exporter file of the virtual lab is made: place
    name -> a NetworkService per host (:func:`place_group`), plus what ``resources`` gives for
    the place (the rack's power ports, console and SD card); ``location`` names the place."""
    groups: dict[str, Any] = {}
    for spec in specs:
        group = place_group(spec, location.format(name=spec.name))
        group.update(resources(spec) if resources else {})
        groups[spec.name] = group
    return groups


def remote_env(spec: LabSpec) -> dict[str, Any]:
    """The place's env file with every target's resources replaced by its RemotePlace."""
    if spec.is_qemu:
        raise PinetError(f"{spec.name}: a QEMU board runs in the test process's labgrid; export netns places")
    return env_through_place(spec, "pinet lab up --places K")


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


def register_places(
    client: Client,
    specs: list[LabSpec],
    exporter: str,
    tags: tuple[str, ...],
    resources: str = "NetworkService/*",
) -> None:
    """Create each place on the coordinator (idempotent), match its group's ``resources``
    (the rack's place takes every resource of its group: ``*``), set its tags."""
    existing = set(client.run(["places"], check=False).split())
    for spec in specs:
        if spec.name not in existing:
            client.run(["-p", spec.name, "create"])
        show = client.run(["-p", spec.name, "show"], check=False)
        match = f"{exporter}/{spec.name}/{resources}"
        if match not in show:
            client.run(["-p", spec.name, "add-match", match])
        client.run(["-p", spec.name, "set-tags", *tags, f"place={spec.name}"])
