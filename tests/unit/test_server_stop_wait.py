"""A server whose client was cut off is not waited for: no last word is coming.

The stop script waits up to 8 s for a ``-1`` server to exit on its own, which it does once
its client's last word arrives (behind a full queue that took 2.5 s).  A client killed by
its host's ``timeout`` after a stall (a hung peer, a cable down) never sends that word, and
those 8 s only delayed the lab fault and its recovery.
"""

from __future__ import annotations

from types import SimpleNamespace

from pytest_pinet.host.remote import CommandResult
from pytest_pinet.traffic.iperf3_runner import Iperf3Options, _Client
from pytest_pinet.traffic.iperf3_server import SERVER_EXIT_WAIT_S, server_stop_script


def _client(exit_code: int | None) -> _Client:
    server = SimpleNamespace(port=25605, host=SimpleNamespace(name="pc"))
    client = _Client(SimpleNamespace(name="pi"), server, "10.204.7.2", Iperf3Options(duration=4))  # type: ignore[arg-type]
    if exit_code is not None:
        client.outcome = CommandResult("iperf3 -c", exit_code, "{}", "")
    return client


def test_only_a_client_that_ended_its_test_gets_its_server_waited_for():
    assert _client(0).ended_its_test
    assert _client(1).ended_its_test  # iperf3's own error: it told the server, or tried
    assert not _client(124).ended_its_test  # `timeout` ended a stalled client
    assert not _client(137).ended_its_test  # ... and killed one that ignored it
    assert not _client(None).ended_its_test  # never ran


def test_the_stop_script_waits_as_long_as_asked():
    waited = server_stop_script(25605, "/tmp/x.pid", "/tmp/x.json")
    assert f"seq {SERVER_EXIT_WAIT_S * 20});" in waited
    assert "seq 1);" in server_stop_script(25605, "/tmp/x.pid", "/tmp/x.json", 0.05)
