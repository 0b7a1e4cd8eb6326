"""Probe outputs into RTT series: ``ping`` (iputils and BSD) and ``irtt client -o -`` JSON.

Pure functions: text in, typed series out, so every format is covered by unit tests with
real outputs (fixtures/lab-outputs, fixtures/bsd).  A series keeps every probe in order,
``None`` for one that never came back, so loss is counted and never hidden in a median.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..model.latency import ProbeFigures, percentile

# iputils and the BSDs say "icmp_seq=N", busybox (Alpine's ping) "seq=N".
REPLY = re.compile(r"\b(?:icmp_)?seq=(?P<seq>\d+)\b.*?\btime[=<](?P<ms>\d+(?:\.\d+)?)\s*ms")
# iputils: "5 packets transmitted, 5 received, 0% packet loss, time 4005ms"
# BSD:     "3 packets transmitted, 3 packets received, 0.0% packet loss"
# busybox: "3 packets transmitted, 3 packets received, 0% packet loss" (numbered from 0, as BSD)
SUMMARY = re.compile(r"(?P<sent>\d+) packets transmitted, (?P<received>\d+) (?:packets )?received")


class ProbeOutputError(ValueError):
    """Probe output that holds no series: the probe died or printed something else."""


@dataclass(frozen=True)
class ProbeSeries:
    """Every probe of one run in send order; ``None`` = lost.  Delays in milliseconds."""

    tool: str
    rtt_ms: tuple[float | None, ...]
    send_ms: tuple[float | None, ...] = ()  # irtt: one-way, client -> server
    receive_ms: tuple[float | None, ...] = ()  # irtt: one-way, server -> client
    sent_s: tuple[float, ...] = ()  # irtt: when each probe left, seconds after the first
    one_way_withheld: str = ""  # irtt: why send_ms/receive_ms hold nothing ('' : they hold the delays)

    @property
    def sent(self) -> int:
        """Probes sent."""
        return len(self.rtt_ms)

    @property
    def received(self) -> int:
        """Probes that came back."""
        return sum(1 for r in self.rtt_ms if r is not None)

    def cut(self, start: int, stop: int, sent_from_s: float = 0.0) -> ProbeSeries:
        """Probes ``start`` to ``stop`` (a slice), every per-probe field alike; their send
        times counted from ``sent_from_s``."""
        return replace(
            self,
            rtt_ms=self.rtt_ms[start:stop],
            send_ms=self.send_ms[start:stop],
            receive_ms=self.receive_ms[start:stop],
            sent_s=tuple(round(t - sent_from_s, 6) for t in self.sent_s[start:stop]),
        )


def parse_ping(text: str, source: str) -> ProbeSeries:
    """A ping run (Linux iputils or BSD) as a series.

    Replies are placed by their sequence number, so a lost probe is a gap; duplicates
    (``DUP!``) are left out.  The summary line gives how many were sent (the last probes
    may be lost too); without it the run did not end as ping ends, and nothing is trusted.
    """
    summary = SUMMARY.search(text)
    if summary is None:
        tail = text.strip().splitlines()[-1:] or ["no output"]
        raise ProbeOutputError(f"{source}: no 'packets transmitted' summary (last line: {tail[0][:200]!r})")
    sent = int(summary.group("sent"))
    replies: dict[int, float] = {}
    for line in text.splitlines():
        if "DUP!" in line:
            continue
        reply = REPLY.search(line)
        if reply:
            replies.setdefault(int(reply.group("seq")), float(reply.group("ms")))
    # iputils numbers probes from 1 and says "N received"; BSD and busybox from 0, "N packets received".
    start = 0 if "packets received" in summary.group(0) else 1
    series = [replies.get(start + index) for index in range(sent)]
    got, said = sum(1 for r in series if r is not None), int(summary.group("received"))
    if got < min(len(replies), sent) or got != min(said, sent):
        raise ProbeOutputError(
            f"{source}: {got} replies read of the {said} its summary counts (of {sent} sent): "
            "a ping whose reply lines this parser does not know"
        )
    return ProbeSeries("ping", tuple(series))


NS_PER_MS = 1e6


NOT_ONE_CLOCK = "the two ends' clocks are not known to be synchronised (not one kernel's clock)"


def parse_irtt(text: str, source: str, same_clock: bool = False) -> ProbeSeries:
    """``irtt client -o -`` JSON as a series. Its one-way delays subtract one host's clock
    from the other's, so they are kept only when both ends read one clock (``same_clock``:
    one kernel, as namespaces of one machine) and none is impossible (negative, or longer
    than its round trip); otherwise they are withheld with the reason, the round trip kept.
    A Pi has no real-time clock: two of them disagree by whatever their NTP has not fixed."""
    try:
        data = json.loads(text)
        trips = data["round_trips"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ProbeOutputError(f"{source}: not irtt JSON with round_trips ({exc})") from None
    if not isinstance(trips, list):
        raise ProbeOutputError(f"{source}: round_trips is not a list")
    rtt: list[float | None] = []
    send: list[float | None] = []
    receive: list[float | None] = []
    sent_at: list[float] = []
    for trip in trips:
        delay = trip.get("delay") or {} if isinstance(trip, dict) else {}
        lost = not isinstance(trip, dict) or str(trip.get("lost", "true")) != "false"
        rtt.append(None if lost or "rtt" not in delay else delay["rtt"] / NS_PER_MS)
        send.append(None if lost or "send" not in delay else delay["send"] / NS_PER_MS)
        receive.append(None if lost or "receive" not in delay else delay["receive"] / NS_PER_MS)
        sent_at.append(_client_send_wall(trip))
    first = sent_at[0] if sent_at else 0.0
    offsets = tuple(round(t - first, 6) for t in sent_at)
    withheld = "" if same_clock else NOT_ONE_CLOCK
    impossible = [
        index
        for index, (r, s, v) in enumerate(zip(rtt, send, receive, strict=True))
        if r is not None and any(d is not None and (d < 0 or d > r) for d in (s, v))
    ]
    if not withheld and impossible:
        withheld = (
            f"{len(impossible)} one-way delays negative or longer than their round trip: the clocks disagree"
        )
    if withheld:
        send = receive = [None] * len(rtt)
    return ProbeSeries("irtt", tuple(rtt), tuple(send), tuple(receive), offsets, withheld)


def _client_send_wall(trip: object) -> float:
    """When the client sent ``trip`` (wall clock, seconds); 0 where irtt gave no stamp."""
    try:
        return float(trip["timestamps"]["client"]["send"]["wall"]) / 1e9  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return 0.0


def sent_before(series: ProbeSeries, seconds: float) -> ProbeSeries:
    """Only the probes sent within ``seconds`` of the first (irtt: the load ended then)."""
    if not series.sent_s:
        return series
    return series.cut(0, sum(1 for t in series.sent_s if t <= seconds))


def sent_from(series: ProbeSeries, seconds: float) -> ProbeSeries:
    """Only the probes sent ``seconds`` or later after the first (irtt: the warm-up is over),
    their send times counted from the first kept."""
    if not series.sent_s:
        return series
    skip = sum(1 for t in series.sent_s if t < seconds)
    first = series.sent_s[skip] if skip < len(series.sent_s) else 0.0
    return series.cut(skip, len(series.rtt_ms), first)


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return percentile(got, 0.5) if got else None


def figures_of(series: ProbeSeries) -> ProbeFigures:
    """Median, p90, p99 and loss of a series; ``None`` where there is nothing to summarize."""
    got = [r for r in series.rtt_ms if r is not None]
    loss = 100.0 * (series.sent - len(got)) / series.sent if series.sent else None
    return ProbeFigures(
        sent=series.sent,
        received=len(got),
        loss_pct=loss,
        median_ms=percentile(got, 0.5) if got else None,
        p90_ms=percentile(got, 0.9) if got else None,
        p99_ms=percentile(got, 0.99) if got else None,
        send_median_ms=_median(series.send_ms),
        receive_median_ms=_median(series.receive_ms),
        one_way_withheld=series.one_way_withheld,
    )
