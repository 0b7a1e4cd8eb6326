"""pinet's parts driving the real tools they wrap, on this machine: irtt's server and client on
loopback, the C compiler building the UDP generator (and the sender it built), dash reading
the receiver's counters, bmaptool writing a card, a PostgreSQL server holding the store.
Processes of their own, so the integration tier; the same parts' unit tests are in
tests/unit (test_latency, test_udpgen, test_provision, test_store)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_pinet.bench.scratch_postgres import scratch_postgres, why_not
from pytest_pinet.host.remote import RemoteHost
from pytest_pinet.record.store import ResultsStore
from pytest_pinet.traffic.latency_probe import IRTT, IrttServer, Probe, ProbePlan
from pytest_pinet.traffic.udpgen import SOURCE, source_hash
from tests.unit.test_latency import LoopbackShell
from tests.unit.test_provision import card_written
from tests.unit.test_store import exercise_store
from tests.unit.test_udpgen import receiver_script_read


def stopped_irtt_probe(after_s: float, keep_from_s: float) -> tuple[Probe, float]:
    """A real irtt probe on loopback planned for 10 s and stopped after ``after_s``; with the
    seconds it took to end once stopped."""
    host = cast(RemoteHost, LoopbackShell())  # all a probe asks of a host: a shell
    server = IrttServer(host, "127.0.0.1", 60)
    port = server.start()
    try:
        probe = Probe(ProbePlan(IRTT, host, host, "127.0.0.1", 0.05), 10, port, keep_from_s)
        runner = threading.Thread(target=probe.run)
        runner.start()
        time.sleep(after_s)
        stopped = time.monotonic()
        probe.stop()
        runner.join(15)
        return probe, time.monotonic() - stopped
    finally:
        server.stop()


def needs_irtt(test: Any) -> Any:
    """A real irtt server and client on loopback."""
    return pytest.mark.skipif(
        shutil.which("irtt") is None, reason="irtt is not installed (scripts/setup.sh installs it)"
    )(test)


@needs_irtt
def test_an_irtt_probe_stopped_with_the_load_ends_then_and_keeps_its_probes():
    probe, ended_after_stop = stopped_irtt_probe(1.5, 0.0)
    series = probe.series()
    # ended with the load, not after its planned 10 s; the ~30 probes sent so far are all kept
    assert ended_after_stop < 3, ended_after_stop
    assert 20 <= series.sent <= 40 and all(rtt is not None for rtt in series.rtt_ms), series.sent
    assert not list(Path("/tmp").glob(Path(probe.pid_file).stem + ".*"))  # pid and JSON files gone


@needs_irtt
def test_an_irtt_probe_started_with_the_load_keeps_only_what_it_sent_after_the_warm_up():
    probe, _ = stopped_irtt_probe(2.0, 1.0)
    series = probe.series()
    # 2 s of probes at 50 ms, the first second left out: ~20 kept, counted from the first kept
    assert 12 <= series.sent <= 26, series.sent
    assert series.sent_s[0] == 0 and series.sent_s[-1] < 1.2, series.sent_s[-1]


def test_the_source_compiles_cleanly_and_refuses_bad_usage(tmp_path):
    binary = tmp_path / "pinet-udpgen"
    cc = subprocess.run(
        ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(binary), str(SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert cc.returncode == 0, cc.stderr
    bad = subprocess.run(
        [str(binary), "--mode", "sendto", "--dest", "a;b", "--duration", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "not a dotted-quad IPv4 address" in bad.stderr and bad.stdout == ""
    ok = subprocess.run(
        [
            str(binary),
            "--mode",
            "sendto",
            "--dest",
            "127.0.0.1",
            "--port",
            "9",
            "--duration",
            "0.5",
            "--no-recverr",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    events = [json.loads(line)["event"] for line in ok.stdout.splitlines()]
    assert ok.returncode == 0 and events[0] == "start" and events[-1] == "end"
    assert len(source_hash()) == 16


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL server on loopback, run as the postgres user."""
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    with scratch_postgres() as url:
        yield url


@pytest.mark.needs_root
def test_postgresql_store_same_schema(postgres):
    store = ResultsStore(postgres)
    try:
        exercise_store(store)
    finally:
        store.close()


def test_the_receiver_script_reads_the_counters_before_its_clock_in_dash():
    receiver_script_read("dash")


def test_an_sd_card_image_with_a_bmap_is_written_by_bmaptool(tmp_path):
    if shutil.which("bmaptool") is None:
        pytest.skip("bmaptool is not installed (the bmap-tools package)")
    card_written(tmp_path, with_bmap=True)
