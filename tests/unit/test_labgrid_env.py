"""A reserved place's name reaches labgrid and the inventory without touching os.environ."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.lab.labgrid_env import open_environment

ENV = """\
targets:
  pi:
    resources:
      RemotePlace:
        name: !template $LG_PLACE
  pc:
    resources:
      RemotePlace:
        name: !template $LG_PLACE
images:
  root: !template $BASE/images/root.img
pinet:
  lab: !template lab-$LG_PLACE
  ssh:
    known_hosts: known_hosts
  hosts:
    pi: {role: board}
    pc: {role: peer}
  links:
    - name: eth
      board: pi
      board_interface: eth0
      board_address: 10.1.0.1
      peer: pc
      peer_interface: eth0
      peer_address: 10.1.0.2
      speed_mbps: 1000
"""

PLACE = {"LG_PLACE": "bench-3", "LG_COORDINATOR": "127.0.0.1:20999"}


@pytest.fixture
def env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LG_PLACE", raising=False)
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    path = tmp_path / "lab" / "place.yaml"
    path.parent.mkdir()
    path.write_text(ENV, encoding="utf-8")
    (path.parent / "known_hosts").write_text("", encoding="utf-8")
    return path


def test_labgrid_reads_the_place_name_and_the_process_environment_is_untouched(env_file: Path) -> None:
    before = dict(os.environ)
    env = open_environment(env_file, PLACE)
    targets = env.config.get_targets()
    assert targets["pi"]["resources"]["RemotePlace"]["name"] == "bench-3"
    assert env.config.get_option("coordinator_address") == "127.0.0.1:20999"
    # relative paths resolve beside the original file, not beside the private copy
    assert env.config.get_image_path("root") == str(env_file.parent / "images" / "root.img")
    assert dict(os.environ) == before


def test_a_coordinator_named_in_the_file_wins(env_file: Path) -> None:
    env_file.write_text(ENV + "options:\n  coordinator_address: 127.0.0.1:20111\n", encoding="utf-8")
    env = open_environment(env_file, PLACE)
    assert env.config.get_option("coordinator_address") == "127.0.0.1:20111"


def test_the_inventory_is_read_with_the_same_substitutions(env_file: Path) -> None:
    inventory = load_inventory(env_file, PLACE)
    assert inventory.lab == "lab-bench-3"
    assert inventory.hosts["pi"].remote_place == "bench-3"
    assert dict(inventory.substitutions) == PLACE
    # without them, as when a file is checked before its place is known, the template stays
    assert load_inventory(env_file).hosts["pi"].remote_place == "$LG_PLACE"


def test_an_unknown_template_variable_names_the_file(env_file: Path) -> None:
    env_file.write_text(ENV.replace("$LG_PLACE\n  pc", "$LG_NOWHERE\n  pc", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"place\.yaml.*LG_NOWHERE"):
        open_environment(env_file, PLACE)
