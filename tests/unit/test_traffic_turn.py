"""Traffic turns: labs sharing one machine's cores measure one test at a time, across
processes; a holder that never lets go is the lab's fault, and a dead one frees the turn."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import time
from typing import cast

import pytest
import yaml

from pytest_pinet.errors import ConfigError, LabFault
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.lab.traffic_turn import traffic_turn
from pytest_pinet.measure.base import Measurer, Site, taking_turns

from .test_inventory import _env


def _is_free(path) -> bool:
    """Whether another open of ``path`` can lock it now (what a second worker would see)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _hold(path, ready, stop) -> None:
    with traffic_turn(path):
        ready.set()
        stop.wait(30)


def _holder(path):
    """Another process holding the turn of ``path``, and the event that lets it go."""
    context = multiprocessing.get_context("fork")
    ready, stop = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(path, ready, stop))
    holder.start()
    assert ready.wait(10)
    return holder, stop


def test_a_second_process_waits_and_a_hung_holder_is_a_lab_fault_naming_it(tmp_path):
    path = tmp_path / "turn.lock"
    holder, stop = _holder(path)
    try:
        started = time.monotonic()
        with (
            pytest.raises(LabFault, match=rf"traffic turn .*held by pid {holder.pid}") as fault,
            traffic_turn(path, wait_s=0.5),
        ):
            pass
        assert fault.value.category == "traffic-turn"
        assert time.monotonic() - started >= 0.5
    finally:
        stop.set()
        holder.join(10)
    with traffic_turn(path, wait_s=5) as waited:  # the holder is gone: the turn is free
        assert waited < 5 and not _is_free(path)
    assert _is_free(path)


def test_a_killed_holder_frees_the_turn_at_once(tmp_path):
    path = tmp_path / "turn.lock"
    holder, _ = _holder(path)
    holder.kill()
    holder.join(10)
    with traffic_turn(path, wait_s=2) as waited:
        assert waited < 2


def test_the_turn_is_re_entrant_within_a_process_and_released_by_the_outermost(tmp_path):
    path = tmp_path / "turn.lock"
    with traffic_turn(path) as outer:
        with traffic_turn(path) as inner:  # one measurement made of others must not deadlock
            assert inner == 0.0 and not _is_free(path)
        assert not _is_free(path)
    assert outer < 1 and _is_free(path)


def test_a_lab_without_a_turn_file_never_waits():
    with traffic_turn(None) as waited:
        assert waited == 0.0


class _Inventory:
    def __init__(self, turn):
        self.traffic_turn = turn


class _Site:
    def __init__(self, turn):
        self.recorder = self.test_id = self.facts = self.hosts = self.progress = self.decide = None
        self.inventory = _Inventory(turn)


class _Measurer(Measurer):
    @taking_turns
    def measure(self, value: int) -> tuple[int, bool]:
        return value, _is_free(self.inventory.traffic_turn)

    @taking_turns
    def die(self) -> None:
        assert not _is_free(self.inventory.traffic_turn)
        raise ValueError("the run died")


def test_a_measurement_holds_the_turn_while_it_runs_and_gives_it_back_when_it_dies(tmp_path):
    path = tmp_path / "turn.lock"
    measurer = _Measurer(cast(Site, _Site(path)))  # all a measurer reads of a site
    assert measurer.measure(7) == (7, False)
    assert _is_free(path)
    with pytest.raises(ValueError, match="the run died"):
        measurer.die()
    assert _is_free(path)


def test_the_env_file_names_the_turn_relative_to_itself(tmp_path):
    data = _env(tmp_path)
    data["pinet"]["traffic_turn"] = "turns/traffic.lock"
    (tmp_path / "turns").mkdir()
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_inventory(path).traffic_turn == tmp_path / "turns" / "traffic.lock"
    data["pinet"].pop("traffic_turn")
    path.write_text(yaml.safe_dump(data))
    assert load_inventory(path).traffic_turn is None
    data["pinet"]["traffic_turn"] = "nowhere/traffic.lock"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"env.yaml: pinet.traffic_turn: folder .*nowhere does not exist"):
        load_inventory(path)
