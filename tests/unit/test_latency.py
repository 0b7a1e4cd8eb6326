"""Latency under load: probe parsers on real outputs, figures, the not-measured paths and the
lower-is-better judgement (issue 34)."""

from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.host.platform import LINUX
from pytest_pinet.host.qdisc_stats import WrappedBacklog, parse_backlog
from pytest_pinet.host.remote import CommandResult, RemoteHost
from pytest_pinet.judge.latency_verdict import (
    baseline_lower_is_better,
    judge_latency,
    latency_rules_from_data,
    load_latency_rules,
    lower_is_better,
)
from pytest_pinet.model import Measurement, TcpDetail, TrafficContext
from pytest_pinet.model.latency import LatencyUse, ProbeFigures, percentile
from pytest_pinet.record.allure_out import per_second_chart
from pytest_pinet.record.context_trend import run_series
from pytest_pinet.record.metric_sets import latency_samples
from pytest_pinet.record.seed_tables import routing_latency_table
from pytest_pinet.record.side_by_side import compare_runs, table
from pytest_pinet.record.store import StoredMeasurement
from pytest_pinet.traffic.latency_parse import (
    ProbeOutputError,
    ProbeSeries,
    figures_of,
    parse_irtt,
    parse_ping,
    sent_before,
    sent_from,
)
from pytest_pinet.traffic.latency_probe import (
    IRTT,
    IRTT_IDLE_INTERVAL_S,
    Probe,
    ProbePlan,
    choose_probe,
    irtt_argv,
    ping_argv,
    trimmed,
)
from pytest_pinet.traffic.load_watch import LoadWatch, idle_seconds
from tests.fixture_paths import BSD_OUTPUTS, LAB_OUTPUTS

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = ROOT / "pytest_pinet" / "data" / "thresholds.yaml"


def test_iputils_ping_numbers_probes_from_one():
    series = parse_ping((LAB_OUTPUTS / "ping-iputils-20221126-loopback.txt").read_text(), "iputils")
    assert series.sent == series.received == 5
    assert all(r is not None and 0 < r < 5 for r in series.rtt_ms)


def test_freebsd_ping_numbers_probes_from_zero():
    series = parse_ping((BSD_OUTPUTS / "freebsd12-ping-loopback.txt").read_text(), "freebsd")
    assert series.rtt_ms == (0.022, 0.036, 0.041)


def test_bsd_ping_with_every_probe_lost_is_a_series_of_losses_not_zeros():
    series = parse_ping((BSD_OUTPUTS / "macos10.14-ping-unreachable-all-lost.txt").read_text(), "macos")
    assert series.sent == 8 and series.received == 0
    figures = figures_of(series)
    assert figures.loss_pct == 100.0 and figures.median_ms is None and figures.p99_ms is None


def test_a_gap_in_the_sequence_is_a_lost_probe():
    text = (LAB_OUTPUTS / "ping-iputils-20221126-loopback.txt").read_text()
    text = "\n".join(line for line in text.splitlines() if "icmp_seq=3 " not in line)
    text = text.replace("5 received, 0% packet loss", "4 received, 20% packet loss")
    series = parse_ping(text, "iputils")
    assert series.rtt_ms[2] is None and series.received == 4
    assert figures_of(series).loss_pct == pytest.approx(20.0)


def test_a_ping_that_died_is_an_error_naming_its_source():
    with pytest.raises(ProbeOutputError, match=r"ping on pc.*no 'packets transmitted'"):
        parse_ping((LAB_OUTPUTS / "ping-iputils-lo-down.txt").read_text(), "ping on pc")


def test_irtt_json_gives_round_trips_and_one_way_delays():
    # Recorded on one machine: both ends read one clock, so the one-way delays mean something.
    series = parse_irtt(
        (LAB_OUTPUTS / "irtt-0.9.0-client-loopback.json").read_text(), "irtt", same_clock=True
    )
    assert series.sent == series.received == 10
    assert all(r is not None and s is not None for r, s in zip(series.rtt_ms, series.send_ms, strict=True))
    assert series.sent_s[0] == 0 and 0.8 < series.sent_s[-1] < 1.0  # 100 ms apart
    assert len(sent_before(series, 0.45).rtt_ms) == 5
    warm = sent_from(series, 0.45)  # a probe started with the load skips its warm-up
    assert warm.rtt_ms == series.rtt_ms[5:] and warm.sent_s[0] == 0 and len(warm.send_ms) == 5
    figures = figures_of(series)
    assert figures.send_median_ms is not None and figures.receive_median_ms is not None
    assert figures.median_ms is not None
    assert figures.send_median_ms + figures.receive_median_ms <= figures.median_ms


def test_busybox_ping_is_read_with_every_reply():
    """Alpine's ping (busybox) says seq=N, not icmp_seq=N: once read as 100 % loss."""
    series = parse_ping((LAB_OUTPUTS / "ping-busybox-1.35-loopback.txt").read_text(), "busybox ping")
    assert series.sent == series.received == 5
    assert series.rtt_ms[0] == 0.031 and series.rtt_ms[-1] == 0.048
    assert figures_of(series).loss_pct == 0.0


def test_a_ping_whose_replies_are_not_read_is_refused_not_called_lost():
    text = (LAB_OUTPUTS / "ping-busybox-1.35-loopback.txt").read_text().replace("seq=", "sequence ")
    with pytest.raises(ProbeOutputError, match="0 replies read of the 5 its summary counts"):
        parse_ping(text, "a ping of another kind")


def test_one_way_delays_of_two_clocks_are_withheld_and_the_round_trip_kept():
    """Two hosts 10.5 s apart (a public irtt output): +10.49 s one way, -10.47 s the other."""
    text = (LAB_OUTPUTS / "irtt-0.9.1-client-unsynchronised-clocks.json").read_text()
    for same_clock in (False, True):  # not known to be one clock, or said to be but impossible
        series = parse_irtt(text, "irtt over Starlink", same_clock=same_clock)
        figures = figures_of(series)
        assert series.received == 5 and 16.0 < figures.median_ms < 17.4  # type: ignore[operator]
        assert figures.send_median_ms is None and figures.receive_median_ms is None
        assert all(d is None for d in (*series.send_ms, *series.receive_ms))
        assert figures.one_way_withheld
    assert "not known to be synchronised" in parse_irtt(text, "x").one_way_withheld
    assert (
        "negative or longer than their round trip" in parse_irtt(text, "x", same_clock=True).one_way_withheld
    )
    loopback = (LAB_OUTPUTS / "irtt-0.9.0-client-loopback.json").read_text()
    assert parse_irtt(loopback, "irtt", same_clock=False).send_ms[0] is None


def test_a_backlog_counter_that_wrapped_below_zero_is_no_4_gib_queue():
    text = (LAB_OUTPUTS / "tc-s-qdisc-backlog-wrapped.txt").read_text()
    with pytest.raises(WrappedBacklog, match="wrapped below zero \\(-9084 bytes\\)"):
        parse_backlog(text, "netem")
    assert parse_backlog(text, "tbf") == (0, 0)  # the child's own counter is fine


def test_irtt_output_that_is_not_json_is_an_error():
    with pytest.raises(ProbeOutputError, match="not irtt JSON"):
        parse_irtt("flag needs an argument: --wait", "irtt on pc")


def test_percentiles_interpolate_between_ranks():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.99) == pytest.approx(99.01)
    figures = figures_of(ProbeSeries("ping", (1.0, None, 3.0, 2.0)))
    assert (figures.sent, figures.received, figures.loss_pct, figures.median_ms) == (4, 3, 25.0, 2.0)


def test_probes_in_flight_when_pinet_stopped_them_are_not_counted_lost():
    series = trimmed(ProbeSeries("ping", (1.0, None, 2.0, None, None)))
    assert series.rtt_ms == (1.0, None, 2.0)


def test_ping_argv_is_the_same_for_both_flavours():
    assert ping_argv("10.205.0.2", 40, 0.2) == ["ping", "-n", "-c", 40, "-i", "0.2", "10.205.0.2"]


def test_backlog_of_the_qdisc_under_test_from_tc():
    text = (LAB_OUTPUTS / "tc-s-qdisc-tbf-pfifo_fast-routed.txt").read_text()
    assert parse_backlog(text, "pfifo_fast") == (0, 0)
    assert parse_backlog(text, "sfq") is None
    busy = text.replace(" backlog 0b 0p requeues 0", " backlog 150Kb 101p requeues 0")
    assert parse_backlog(busy, "pfifo_fast") == (150 * 1024, 101)


class ToolessHost:
    """A Linux host whose shell has neither irtt nor ping (or answers pings with ``ping``)."""

    platform = LINUX
    sudo = False

    def __init__(self, name, tools="", ping_output=""):
        self.name = name
        self.tools = tools
        self.ping_output = ping_output

    def run_shell(self, script, *, timeout=60.0, root=False, cleanup=False):
        if "command -v" in script:
            return CommandResult(script, 0, self.tools, "")
        return CommandResult(script, 1, self.ping_output, "")


def host(name: str, tools: str = "", ping_output: str = "") -> Any:
    """A :class:`ToolessHost` where a RemoteHost is expected."""
    return ToolessHost(name, tools, ping_output)


def test_no_probe_tool_is_not_measured_with_the_reason():
    plan = choose_probe(host("pc"), host("inet"), "10.205.0.2")
    assert plan == "neither irtt nor ping is installed on pc"
    watch = LoadWatch(plan, host("pi"), ("eth0",), "pfifo_fast", 2, 4)
    watch.probe_idle()
    latency = watch.result()
    assert latency.not_measured == plan and latency.idle is None and latency.load is None
    verdict = judge_latency(latency, {"qdisc": "pfifo_fast"}, (), [])
    assert verdict.status == "not-measured" and not verdict.failed
    assert verdict.p99_ms is None and "neither irtt nor ping" in verdict.reason


def test_every_idle_probe_lost_means_filtered_not_measured():
    lost = (BSD_OUTPUTS / "macos10.14-ping-unreachable-all-lost.txt").read_text()
    prober = host("pc", "ping\n", lost)
    plan = choose_probe(prober, host("inet"), "10.205.0.2")
    assert not isinstance(plan, str) and plan.tool == "ping"
    watch = LoadWatch(plan, host("pi"), ("eth0",), "pfifo_fast", 2, 4)
    watch.probe_idle()
    latency = watch.result()
    assert latency.load is None and "all 8 idle ping probes" in (latency.not_measured or "")
    assert judge_latency(latency, {}, (), [1.0, 1.0]).status == "not-measured"


def _latency(p99, idle=0.2):
    return LatencyUse(
        "irtt", "pc", "10.205.0.2", 50.0,
        ProbeFigures(40, 40, 0.0, idle, idle, idle),
        ProbeFigures(80, 80, 0.0, p99 * 0.9, p99 * 0.95, p99),
    )  # fmt: skip


def test_lower_is_better_a_rise_is_a_regression_a_fall_is_not():
    assert lower_is_better("rtt_load_p99_ms") and not lower_is_better("goodput_mbps")
    history = [11.3, 11.1, 11.4, 11.2]
    deeper = judge_latency(_latency(36.0), {"qdisc": "pfifo_fast"}, (), history)
    assert deeper.status == "regression" and deeper.failed
    assert "lower is better" in deeper.reason and "36.0 ms" in deeper.reason
    shallower = judge_latency(_latency(4.0), {"qdisc": "pfifo_fast"}, (), history)
    assert shallower.status == "pass" and not shallower.failed
    assert shallower.baseline is not None and shallower.baseline.status == "improvement"
    same = baseline_lower_is_better(11.25, history)
    assert same.status == "within" and same.baseline == pytest.approx(11.25)


def test_the_ceiling_of_the_qdisc_applies_and_states_its_rule():
    rules = load_latency_rules(THRESHOLDS)
    context = {"scenario": "routing", "qdisc": "fq_codel", "link_speed_mbps": 10, "duplex": "half"}
    assert judge_latency(_latency(12.0), context, rules, []).status == "pass"
    above = judge_latency(_latency(300.0), context, rules, [])
    assert above.failed and "latency-fq_codel-10m" in above.reason and above.ceiling_ms == 40
    fifo = {"scenario": "routing", "qdisc": "pfifo_fast", "link_speed_mbps": 10}
    assert judge_latency(_latency(3166.0), {**fifo, "duplex": "half"}, rules, []).status == "pass"


def test_induced_latency_is_the_rise_of_the_median():
    latency = _latency(20.0, idle=2.0)
    assert latency.induced_ms == pytest.approx(16.0) and latency.induced_p99_ms == pytest.approx(18.0)


def test_a_latency_rule_without_a_ceiling_names_the_file():
    with pytest.raises(ConfigError, match=r"t\.yaml: latency_rules\[0\].*max_p99_ms"):
        latency_rules_from_data({"rules": [], "latency_rules": [{"id": "x", "max_p99_ms": 0}]}, "t.yaml")


def _row(run, p99, goodput=941.0):
    key = "board=pi|scenario=routing|qdisc=pfifo_fast|direction=download"
    return StoredMeasurement(1, run, "t", key, 0.0, goodput, "", "", "", "pi", "pass", (), p99)


def test_compare_calls_a_rise_of_latency_worse_and_a_fall_better():
    history = {_row("x", 0).context_key: [11.2, 11.3, 11.1]}
    (rise,) = compare_runs([_row("a", 11.2)], [_row("b", 45.0)], history, "latency")
    assert rise.beyond_noise and rise.worse and rise.delta_pct is not None and rise.delta_pct > 0
    (fall,) = compare_runs([_row("a", 11.2)], [_row("b", 1.2)], history, "latency")
    assert fall.beyond_noise and fall.worse is False
    assert (
        "BEYOND NOISE, WORSE" in table([rise], "a", "b")[2]
        and "lower is better" in table([rise], "a", "b")[1]
    )
    # goodput keeps its direction: a fall is worse
    (drop,) = compare_runs(
        [_row("a", 1, 941.0)], [_row("b", 1, 800.0)], {_row("x", 0).context_key: [941, 940, 941]}
    )
    assert drop.worse


def test_latency_has_its_own_metric_sets_in_ms_lower_is_better_and_none_when_unmeasured():
    found = {s.kind.key: s for s in latency_samples(_latency(20.0, idle=2.0), "ctx")}
    assert found["d-latency-p99"].value == 20.0 and found["d-latency-p99"].kind.better == "lower"
    assert (
        found["f-latency-induced"].value == pytest.approx(16.0) and found["d-latency-p99"].kind.unit == "ms"
    )
    missing = LatencyUse("", "", "", 0.0, None, None, not_measured="no ping")
    assert list(latency_samples(missing, "ctx")) == []


def test_the_latency_table_gives_each_qdisc_or_says_why_not():
    measured = _latency(20.0, idle=2.0)
    rows = [
        {"context": {"scenario": "routing", "duplex": "half", "qdisc": "fq_codel", "direction": "download"},
         "goodput_mbps": 9.4, "detail": {"latency": asdict(measured)}},
        {"context": {"scenario": "routing", "duplex": "half", "qdisc": "sfq", "direction": "download"},
         "goodput_mbps": 9.4,
         "detail": {"latency": asdict(LatencyUse("", "", "", 0.0, None, None, not_measured="no ping on pc"))}},
    ]  # fmt: skip
    lines = routing_latency_table(rows)
    assert lines[1].split()[:9] == ["fq_codel", "idle", "2.0", "ms,", "under", "load", "p50", "18.0", "p99"]
    assert lines[2].endswith("latency not measured: no ping on pc")


def test_trends_of_latency_take_every_probe_as_a_sample():
    rows = [_row("a", 11.0), _row("b", 12.0)]
    rows = [dataclasses.replace(r, latency_rtt_ms=(10.0, 11.0, 12.0)) for r in rows]
    series = run_series(rows, "latency")
    assert [s.samples for s in series] == [(10.0, 11.0, 12.0)] * 2
    assert run_series([_row("c", None)], "latency") == []


def test_a_lab_file_extending_the_shipped_one_keeps_its_latency_rules(tmp_path):
    lab_file = tmp_path / "lab.yaml"
    lab_file.write_text(
        "extends: shipped\nrules: []\nlatency_rules:\n"
        "  - {id: latency-fq_codel-10m, match: {qdisc: fq_codel}, max_p99_ms: 25}\n"
    )
    rules = {rule.rule_id: rule for rule in load_latency_rules(lab_file)}
    assert rules["latency-fq_codel-10m"].max_p99_ms == 25  # the lab's overrides the shipped one
    assert "latency-pfifo_fast-10m" in rules  # the rest come from the shipped file
    lab_file.write_text(lab_file.read_text().replace("extends: shipped\n", ""))
    assert [rule.rule_id for rule in load_latency_rules(lab_file)] == ["latency-fq_codel-10m"]


def test_the_per_second_chart_draws_rtt_under_load_beside_goodput():
    context = TrafficContext(
        lab="virtual", scenario="routing", board="qpi", peer="inet<>pc", link="qpi-router",
        adapter="virtio", direction="download", duplex="half", streams=10, duration_s=20, omit_s=2,
        link_speed_mbps=10, mtu=1500, qdisc="pfifo_fast",
    )  # fmt: skip
    rtts = tuple(None if i % 10 == 9 else 2000.0 + i for i in range(100))
    latency = dataclasses.replace(_latency(3166.0, idle=1.9), load_rtt_ms=rtts)
    detail = TcpDetail(8.5, 0, (0.85,) * 10, 1.0, 2.0, "iperf 3.12", latency=latency)
    measured = Measurement("t", context, 8.5, 9.4, 0.0, 22.0, detail, interval_mbps=(8.5,) * 20)
    with_rtt = per_second_chart(measured)
    without = per_second_chart(
        dataclasses.replace(measured, detail=dataclasses.replace(detail, latency=None))
    )
    assert with_rtt is not None and without is not None
    assert with_rtt.startswith(b"\x89PNG") and with_rtt != without  # the RTT series is drawn


def test_irtt_waits_for_late_replies_in_proportion_to_the_slowest_round_trip():
    # three times the slowest RTT seen (3 s if nothing came back), not a fixed 3 s per probe
    argv = irtt_argv("10.0.0.1", 32000, 4, 0.05, "/tmp/p.json")
    assert "--wait=3x3s" in argv and "-d" in argv and argv[argv.index("-d") + 1] == "4s"
    # JSON to a file: interrupted, irtt writes the file, and prints nothing to '-o -'
    assert argv[argv.index("-o") + 1] == "/tmp/p.json"


def test_idle_probe_sends_twenty_probes_within_two_seconds():
    assert idle_seconds(IRTT_IDLE_INTERVAL_S) == pytest.approx(0.4)  # irtt: 20 probes
    assert idle_seconds(0.2) == 2.0  # iputils ping: 10
    assert idle_seconds(1.0) == 2.0  # a BSD's ping: 2, never longer


class LoopbackShell:
    """This machine's own shell where a probe expects a host: irtt on loopback, for real."""

    name = "loopback"

    def run_shell(
        self, script: str, *, timeout: float = 60.0, root: bool = False, cleanup: bool = False
    ) -> CommandResult:
        done = subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, timeout=timeout, check=False
        )
        return CommandResult(script, done.returncode, done.stdout, done.stderr)


def test_a_probe_is_signalled_once_so_irtt_writes_what_it_measured():
    # timeout without --foreground passes SIGINT to the child and then to its process group:
    # irtt, interrupted twice, exits 3 without its file (4 lab faults in one trial)
    host = cast(RemoteHost, LoopbackShell())
    for tool in (IRTT, "ping"):
        probe = Probe(ProbePlan(tool, host, host, "127.0.0.1", 0.05), 10, 30000)
        assert "timeout --foreground --kill-after=5" in probe.script, probe.script
