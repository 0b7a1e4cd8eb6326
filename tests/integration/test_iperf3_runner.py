"""The iperf3 runner against real iperf3 and sshd in the namespace lab."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from pytest_pinet.errors import LabFault
from pytest_pinet.host.remote import RemoteHost, SshEndpoint
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.polling import wait_until
from pytest_pinet.traffic import iperf3_runner
from pytest_pinet.traffic.adaptive import SettleRule
from pytest_pinet.traffic.iperf3_parse import Iperf3ReportedError, parse_iperf3
from pytest_pinet.traffic.iperf3_runner import (
    AdaptiveStop,
    Iperf3Options,
    client_argv,
    run_iperf3,
    run_iperf3_both_ways,
)
from pytest_pinet.traffic.iperf3_server import Iperf3Server
from pytest_pinet.virtlab import virtual_lab


@pytest.fixture
def hosts(fresh_lab):
    virtual_lab.up(fresh_lab)
    inventory = load_inventory(fresh_lab.env_file)
    made = {name: RemoteHost(entry.endpoint) for name, entry in inventory.hosts.items()}
    yield fresh_lab, inventory, made
    for host in made.values():
        host.close()


def _iperf3_pids(spec, host):
    return [
        pid
        for pid in virtual_lab.netns_pids(spec.netns(host))
        if "iperf3" in Path(f"/proc/{pid}/cmdline").read_text()
    ]


def test_run_measures_and_leaves_only_foreign_processes(hosts):
    spec, inventory, made = hosts
    link = inventory.link("eth")
    # Someone else's iperf3 server on the peer must survive our run.
    foreign = subprocess.Popen(["ip", "netns", "exec", spec.netns("pc"), "iperf3", "-s", "-p", "5999"])
    try:
        _wait_until_listening(spec.netns("pc"), 5999)
        run = run_iperf3(
            made["pi"], made["pc"], link.peer_address, Iperf3Options(streams=2, duration=2, omit=0)
        )
        assert run.result.num_streams == 2
        assert run.result.goodput_mbps is not None and 100 < run.result.goodput_mbps < 1000
        assert '"end"' in run.server_json  # the server's own report was collected
        assert run.client_command.startswith("timeout --kill-after=5")
        assert _iperf3_pids(spec, "pc") == [foreign.pid]  # ours is gone, the foreign one stays
        assert foreign.poll() is None
    finally:
        foreign.kill()
        foreign.wait()


@pytest.fixture
def client_pid_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The pid files of the clients this test starts: the shared /tmp also holds those of
    other labs' clients, running on the test command's other workers."""
    made: list[str] = []

    class Recorded(iperf3_runner._Client):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self.pid_file)

    monkeypatch.setattr(iperf3_runner, "_Client", Recorded)
    return made


def test_adaptive_run_stops_once_settled_with_the_receivers_figure(hosts, client_pid_files):
    spec, inventory, made = hosts
    link = inventory.link("eth")
    # A loose precision so a busy CI machine settles too; the bound is 30 s, the run far less.
    options = Iperf3Options(duration=30, omit=1, congestion="cubic")
    adaptive = AdaptiveStop(SettleRule(min_seconds=3, precision_pct=2.0), link.peer_interface)
    run = run_iperf3(made["pi"], made["pc"], link.peer_address, options, adaptive)
    assert run.ended_by == "settled"
    assert run.precision_pct is not None and run.precision_pct <= 2.0
    assert run.finished - run.started < 20
    received = run.result.received
    assert received is not None and 3 <= received.seconds < 20
    # the receiver's count over whole seconds: the emulated GbE link's rate, not 0 and not more
    assert 850 < received.mbps < 960
    assert len(run.result.streams) == 10
    per_stream = [s.received.mbps for s in run.result.streams if s.received is not None]
    assert sum(per_stream) == pytest.approx(received.mbps, rel=1e-4)
    assert _iperf3_pids(spec, "pi") == [] and _iperf3_pids(spec, "pc") == []  # client and server gone
    assert len(client_pid_files) == 1
    assert made["pi"].run_shell(f"ls {client_pid_files[0]} 2>/dev/null | wc -l").stdout.strip() == "0"


def test_adaptive_full_duplex_stops_both_directions_together(hosts):
    _spec, inventory, made = hosts
    link = inventory.link("eth")
    options = Iperf3Options(duration=30, omit=1, congestion="cubic")
    forward, backward = run_iperf3_both_ways(
        made["pi"],
        made["pc"],
        link.board_address,
        link.peer_address,
        options,
        options,
        (SettleRule(min_seconds=3, precision_pct=2.0), link.board_interface, link.peer_interface),
    )
    assert forward.ended_by == backward.ended_by == "settled"
    assert abs(forward.finished - backward.finished) < 3
    for run in (forward, backward):
        assert run.result.received is not None and 500 < run.result.received.mbps < 960


def test_fixed_run_records_that_it_was_fixed(hosts):
    _spec, inventory, made = hosts
    link = inventory.link("eth")
    run = run_iperf3(made["pc"], made["pi"], link.board_address, Iperf3Options(streams=2, duration=2, omit=0))
    assert run.ended_by == "fixed" and run.precision_pct is None
    assert run.result.received is not None and run.result.received.seconds == pytest.approx(2, abs=0.2)


def _sockets(netns: str, state: str, port: int) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", netns, "ss", "-Htn", "state", state, f"sport = :{port}"],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout.strip()


def _wait_until_served(netns: str, port: int, within_s: float = 10.0) -> None:
    """Until the server in ``netns`` holds a client on ``port``: a fixed 0.7 s sleep let the
    second client win the race on a loaded machine."""
    wait_until(
        lambda: bool(_sockets(netns, "established", port)),
        timeout=within_s,
        pace=0.05,
        on_timeout=lambda: AssertionError(f"no client reached the server on port {port} within {within_s} s"),
    )


def _wait_until_listening(netns: str, port: int, within_s: float = 10.0) -> None:
    """Until a server in ``netns`` listens on ``port`` (a sleep was a guess at how long that takes)."""
    wait_until(
        lambda: bool(_sockets(netns, "listening", port)),
        timeout=within_s,
        pace=0.05,
        on_timeout=lambda: AssertionError(f"nothing listens on port {port} within {within_s} s"),
    )


def test_busy_server_is_reported_as_such(hosts):
    spec, inventory, made = hosts
    link = inventory.link("eth")
    server = Iperf3Server(made["pc"])
    port = server.start()
    first = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            spec.netns("pi"),
            "iperf3",
            "-c",
            link.peer_address,
            "-p",
            str(port),
            "-t",
            "3",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_until_served(spec.netns("pc"), port)
        second = made["pi"].run(
            client_argv(link.peer_address, port, Iperf3Options(streams=1, duration=1, omit=0))
        )
        with pytest.raises(Iperf3ReportedError) as info:
            parse_iperf3(second.stdout, "second client")
        assert info.value.category == "server-busy"
    finally:
        first.wait(timeout=10)
        server.stop()


def test_nothing_listening_is_a_connect_fault(hosts):
    _, inventory, made = hosts
    link = inventory.link("eth")
    # A receiver whose server we never start: point the client at a closed port directly.
    out = made["pi"].run(client_argv(link.peer_address, 5, Iperf3Options(streams=1, duration=1, omit=0)))
    with pytest.raises(Iperf3ReportedError) as info:
        parse_iperf3(out.stdout, "client")
    assert info.value.category == "connect"


def test_unreachable_host_is_a_lab_fault_not_a_traceback(hosts):
    _spec, inventory, _ = hosts
    good = inventory.hosts["pi"].endpoint
    ghost = RemoteHost(
        SshEndpoint("ghost", "10.203.9.99", "root", 22, good.identity, good.known_hosts), connect_timeout=1
    )
    started = time.monotonic()
    with pytest.raises(LabFault) as info:
        ghost.run(["true"])
    assert info.value.category in {"unreachable", "ssh"}
    assert time.monotonic() - started < 10


def test_ssh_drop_mid_command_is_a_lab_fault(hosts):
    spec, _inventory, made = hosts
    pi = made["pi"]
    assert pi.check(["echo", "up"]).strip() == "up"
    virtual_lab.power(spec, "pi", "off")  # kills sshd and every session of the host
    with pytest.raises(LabFault) as info:
        pi.run(["sleep", "1"], timeout=5)
    assert info.value.category in {"ssh-dropped", "unreachable", "ssh"}
    virtual_lab.power(spec, "pi", "on")
    assert pi.check(["echo", "back"]).strip() == "back"  # the connection is rebuilt
