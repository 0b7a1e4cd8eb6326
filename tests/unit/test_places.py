"""Local place locks: exclusive, preferring the worker's own place, freed when the holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.lab.places import Place, PlaceLock, hold_hosts, take_place

HOLD = """
import sys, time
from pathlib import Path
from pytest_pinet.lab.places import PlaceLock
lock = PlaceLock(Path(sys.argv[1]), sys.argv[2])
assert lock.try_take()
print("held", flush=True)
time.sleep(600)
"""


def _holder(lock_dir: Path, place: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_dir), place], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_place_has_one_holder_and_is_freed_when_it_is_killed(tmp_path):
    holder = _holder(tmp_path, "pinet1")
    try:
        assert not PlaceLock(tmp_path, "pinet1").try_take()
        assert PlaceLock(tmp_path, "pinet2").try_take()  # other places are unaffected
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    # The kernel dropped the dead holder's lock: the place is free without any cleanup.
    mine = PlaceLock(tmp_path, "pinet1")
    assert mine.try_take()
    mine.release()
    assert not list(tmp_path.glob("pinet1-*.lock"))  # a released place leaves no file


def test_workers_prefer_their_own_place_and_fall_back_to_a_free_one(tmp_path):
    places = [Place(f"pinet{n}", "virtual") for n in (1, 2, 3)]
    second, lock2 = take_place(places, tmp_path, preferred=1)
    assert second.name == "pinet2"
    other, lock_other = take_place(places, tmp_path, preferred=1)  # pinet2 taken: next one
    assert other.name == "pinet3"
    lock2.release()
    lock_other.release()


def test_waiting_for_a_place_is_bounded_and_says_which(tmp_path):
    holder = _holder(tmp_path, "pinet1")
    try:
        started = time.monotonic()
        with pytest.raises(LabFault) as info:
            take_place([Place("pinet1", "virtual")], tmp_path, wait=0.5)
        assert info.value.category == "place-busy" and "pinet1" in str(info.value)
        assert time.monotonic() - started < 10
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()


def test_a_wait_says_at_once_what_it_waits_for_and_who_holds_it(tmp_path):
    holder = _holder(tmp_path, "pinet1")
    try:
        said: list[str] = []
        with pytest.raises(LabFault):
            take_place([Place("pinet1", "virtual")], tmp_path, wait=0.3, waiting=said.append)
        assert len(said) == 1, said  # once, not once per retry
        assert said[0].startswith("pinet: waiting up to 0 s for place pinet1 (held by pid ")
        assert f"pid {holder.pid}," in said[0] and "--pinet-place-wait" in said[0]
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    host = _holder(tmp_path, "lab.yaml#pc")  # a peer another run measures with its board
    try:
        said = []
        with pytest.raises(LabFault):
            hold_hosts(tmp_path, "lab.yaml", ["pi", "pc"], wait=0.2, waiting=said.append)
        assert len(said) == 1 and "for place lab.yaml#pc (held by pid " in said[0], said
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.wait()


def test_odd_place_names_make_safe_lock_files(tmp_path):
    lock = PlaceLock(tmp_path, "../../etc/passwd; rm -rf /")
    assert lock.path.parent == tmp_path and "/" not in lock.path.name
    assert lock.try_take()
    lock.release()


def test_hosts_of_one_lab_are_held_all_or_none(tmp_path):
    first = hold_hosts(tmp_path, "lab.yaml", ["pi4", "pc-lan"])
    # pi5 shares the peer pc-lan: it waits, and while it waits it holds nothing
    with pytest.raises(LabFault, match=r"lab.yaml: hosts \['pc-lan', 'pi5'\] stayed in use"):
        hold_hosts(tmp_path, "lab.yaml", ["pi5", "pc-lan"], wait=0.3)
    alone = hold_hosts(tmp_path, "lab.yaml", ["pi5"], wait=0.1)
    for lock in alone:
        lock.release()
    other_lab = hold_hosts(tmp_path, "other.yaml", ["pi4"], wait=0.1)  # another lab's pi4
    for lock in first + other_lab:
        lock.release()
    again = hold_hosts(tmp_path, "lab.yaml", ["pi5", "pc-lan"], wait=0.1)
    assert [lock.held for lock in again] == [True, True]
    for lock in again:
        lock.release()
    assert not list(tmp_path.glob("*.lock"))
