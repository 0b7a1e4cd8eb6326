"""Parse iperf3 ``-J`` output as real labs produce it.

Real captures are rarely a clean JSON document: terminals add ``^C`` or escape echoes before
it, wrappers print log lines first, ``kubectl exec -t`` turns line endings into CRLF, a killed
client leaves half a document, and shell loops append two runs to one file.  This module finds
the documents in such text and turns each into an :class:`Iperf3Result`, or says precisely
why it cannot: never a traceback, never a silent zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import PinetError
from .iperf3_model import (
    CpuUtilization,
    IntervalSample,
    Iperf3Result,
    StreamResult,
    Totals,
    UdpTotals,
)

_ERROR_PREFIX = re.compile(r"^error\s*-\s*", re.IGNORECASE)


class Iperf3OutputError(PinetError):
    """iperf3 output that holds no usable result; ``source`` names where it came from."""

    kind = "unparsable"

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        self.detail = message
        super().__init__(f"{source}: {message}")


class Iperf3NoJsonError(Iperf3OutputError):
    """The text holds no JSON document at all (empty, or iperf3 ran without ``-J``)."""

    kind = "no-json"


class Iperf3TruncatedError(Iperf3OutputError):
    """A JSON document starts but never ends: the client was killed or the capture cut."""

    kind = "truncated"


class Iperf3SchemaError(Iperf3OutputError):
    """Valid JSON that is not an iperf3 result (or misses a field every version writes)."""

    kind = "schema"


class Iperf3ReportedError(Iperf3OutputError):
    """iperf3 itself reported an error and produced no totals.

    ``category`` sorts the message into what a lab can act on: ``server-busy`` (another test
    holds the server), ``connect`` (nothing listens / no route), ``interrupted`` (a signal
    ended the run), ``control-socket`` (the control connection died) or ``iperf3``.
    """

    kind = "reported"

    def __init__(self, source: str, message: str) -> None:
        self.category = classify_error(message)
        super().__init__(source, f"iperf3 reported: {message}")
        self.iperf3_message = message


class Iperf3NoTotalsError(Iperf3OutputError):
    """A run that ended without totals and without saying why (iperf3 3.9 refused or busy:
    the reason went to stderr only, if anywhere)."""

    kind = "no-totals"


class Iperf3MultipleRunsError(Iperf3OutputError):
    """The text holds several runs where exactly one was expected."""

    kind = "multiple"


def classify_error(message: str) -> str:
    """Sort an iperf3 error message into a stable category word."""
    text = message.lower()
    if "busy" in text:
        return "server-busy"
    if "unable to connect" in text or "connection refused" in text or "no route" in text:
        return "connect"
    if "interrupt" in text or "terminated" in text:
        return "interrupted"
    if "control socket" in text or "control message" in text or "connection reset" in text:
        # 3.9 says "unable to send/receive control message" when the server is busy or
        # refused the test; later versions say "control socket".
        return "control-socket"
    return "iperf3"


def stderr_error(stderr: str) -> str | None:
    """iperf3's own error line from stderr (``iperf3: error - ...``), the last one if several."""
    found = None
    for line in stderr.splitlines():
        match = re.search(r"iperf3:\s*error\s*-\s*(.+)", line)
        if match:
            found = match.group(1).strip()
    return found


# Keys iperf3 before 3.10 wrote twice in a --bidir run: first the forward figures, then the
# reverse ones under the same name.  JSON keeps the last, so the second is renamed on reading
# to the name later versions use.
REPEATED_BIDIR_KEYS = frozenset({"sum", "sum_sent", "sum_received"})


def _keep_repeated_bidir_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result and key in REPEATED_BIDIR_KEYS and f"{key}_bidir_reverse" not in result:
            result[f"{key}_bidir_reverse"] = value
        else:
            result[key] = value
    return result


def split_documents(text: str, source: str) -> list[Any]:
    """Return every complete JSON value in ``text``, skipping any non-JSON prefix.

    Each ``{`` or ``[`` is a candidate start: a terminal echo such as ``^[[F`` begins with
    ``[`` characters that are not JSON, so a candidate that fails in the middle of the text
    is skipped.  A candidate that fails at the very end of the text is a document cut
    short.  Top-level arrays are flattened, because tools that collect runs write them as a
    list.  Complete documents before a cut one are kept: they are real measurements.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    end_of_text = len(text.rstrip())
    decoder = json.JSONDecoder(object_pairs_hook=_keep_repeated_bidir_keys)
    documents: list[Any] = []
    position = _next_document_start(text, 0)
    if position < 0:
        raise Iperf3NoJsonError(source, "no JSON document found (was iperf3 run with -J?)")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            if exc.pos >= end_of_text:
                if documents:
                    break  # a cut-off run after complete ones: keep the complete ones
                raise Iperf3TruncatedError(
                    source,
                    f"JSON ends early at line {exc.lineno} column {exc.colno} "
                    "(client killed or capture cut short)",
                ) from None
            position = _next_document_start(text, position + 1)
            continue
        if isinstance(value, list):
            if not value or not all(isinstance(v, Mapping) for v in value):
                # "[  5] local ..." in iperf3's text output is valid JSON but not a run.
                position = _next_document_start(text, position + 1)
                continue
            documents.extend(value)
        else:
            documents.append(value)
        position = _next_document_start(text, end)
    if not documents:
        raise Iperf3NoJsonError(source, "no complete JSON document found")
    return documents


def _next_document_start(text: str, position: int) -> int:
    """Index of the next '{' or '[' at or after ``position``, or -1."""
    candidates = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
    return min(candidates) if candidates else -1


def _is_iperf3_document(doc: Any) -> bool:
    return isinstance(doc, Mapping) and bool({"start", "end", "error"} & set(doc))


STREAM_EVENTS = frozenset({"start", "interval", "end", "error"})


def _is_stream_event(doc: Any) -> bool:
    return isinstance(doc, Mapping) and doc.get("event") in STREAM_EVENTS and "data" in doc


def assemble_json_stream(documents: list[Any]) -> list[Any]:
    """Turn ``--json-stream`` events (3.17+: one ``{"event": ..., "data": ...}`` per line)
    into the documents ``-J`` would have written; a ``start`` event begins a new run.
    Other documents pass through unchanged."""
    runs: list[Any] = []
    current: dict[str, Any] | None = None
    for doc in documents:
        if not _is_stream_event(doc):
            current = None
            runs.append(doc)
            continue
        event, data = doc["event"], doc["data"]
        if current is None or event == "start":
            current = {"intervals": []}
            runs.append(current)
        if event == "interval":
            current["intervals"].append(data)
        else:
            current[event] = data
    return runs


def _documents(text: str, source: str) -> list[Any]:
    """The iperf3 runs in ``text``, from ``-J`` documents or ``--json-stream`` events."""
    documents = [d for d in assemble_json_stream(split_documents(text, source)) if _is_iperf3_document(d)]
    if not documents:
        raise Iperf3SchemaError(source, "JSON found, but no iperf3 document (no 'start', 'end' or 'error')")
    return documents


def parse_iperf3_all(text: str, source: str = "<iperf3 output>") -> list[Iperf3Result]:
    """Parse every run in ``text``.

    Error-only documents are returned as results with ``error`` set and no totals, so a
    caller looking at a whole log sees every attempt.  Raises only when no document exists.
    """
    documents = _documents(text, source)
    return [result_from_document(doc, f"{source}[{n}]") for n, doc in enumerate(documents)]


def parse_iperf3(text: str, source: str = "<iperf3 output>", stderr: str = "") -> Iperf3Result:
    """Parse exactly one run; raise a typed :class:`Iperf3OutputError` if there is none.

    A run that reports an error *and* totals (interrupted with ``^C``) is returned with
    ``error`` set: its numbers are real and the caller decides what they are worth.  A run
    without totals is never a result: its reason comes from the JSON, else from ``stderr``
    (iperf3 3.9 writes it only there), else it is said to be missing.
    """
    documents = _documents(text, source)
    if len(documents) != 1:
        raise Iperf3MultipleRunsError(source, f"holds {len(documents)} runs where one was expected")
    result = result_from_document(documents[0], source)
    if not result.has_totals:
        reason = result.error or stderr_error(stderr)
        if reason is not None:
            raise Iperf3ReportedError(source, reason)
        said = f"; stderr: {stderr.strip()[:200]}" if stderr.strip() else ""
        raise Iperf3NoTotalsError(source, f"the run ended without totals and without an error{said}")
    return result


def result_from_document(doc: Any, source: str) -> Iperf3Result:
    """Build an :class:`Iperf3Result` from one decoded iperf3 document."""
    if not isinstance(doc, Mapping):
        raise Iperf3SchemaError(source, f"expected a JSON object, got {type(doc).__name__}")
    if "start" not in doc and "end" not in doc and "error" not in doc:
        raise Iperf3SchemaError(source, "not an iperf3 document (no 'start', 'end' or 'error')")
    start = _mapping(doc.get("start"))
    test_start = _mapping(start.get("test_start"))
    end = _mapping(doc.get("end"))
    error = doc.get("error")
    error_text = _ERROR_PREFIX.sub("", str(error)).strip() if error else None

    # An error before the test started leaves no test_start: say "unknown", invent nothing.
    protocol = str(test_start.get("protocol", "unknown")).upper() if test_start else "unknown"
    role = "server" if "accepted_connection" in start and "connecting_to" not in start else "client"
    all_streams = [_mapping(x) for x in _list(end.get("streams"))]
    # Before 3.16 test_start has no "bidir": a --bidir run shows as reverse-direction totals
    # or as streams of both kinds in one run.
    flags = {_sender_flag(x) for x in all_streams}
    bidir = (
        bool(test_start.get("bidir", 0))
        or "sum_sent_bidir_reverse" in end
        or "sum_received_bidir_reverse" in end
        or {True, False} <= flags
    )
    forward = [x for x in all_streams if not bidir or _sender_flag(x) is not False]
    backward = [x for x in all_streams if bidir and _sender_flag(x) is False]
    sent, received, udp = _totals(end, protocol)
    if role == "server" and bool(test_start.get("reverse", 0)):
        udp = None  # the server sent: its jitter/loss fields are placeholders, not measured
    intervals, flagged = _intervals(doc.get("intervals"), _num(test_start.get("omit"), 0.0))
    connecting = _mapping(start.get("connecting_to"))
    timestamp = _mapping(start.get("timestamp")).get("timesecs")
    version = start.get("version")
    return Iperf3Result(
        version=str(version) if version is not None else None,
        protocol=protocol,
        num_streams=int(_num(test_start.get("num_streams"), len(forward))),
        reverse=bool(test_start.get("reverse", 0)),
        bidir=bidir,
        role=role,
        duration=_num(test_start.get("duration"), 0.0),
        omit=_num(test_start.get("omit"), 0.0),
        bytes_target=int(_num(test_start.get("bytes"), 0)),
        timestamp=int(timestamp) if isinstance(timestamp, int | float) else None,
        remote_host=str(connecting["host"]) if "host" in connecting else None,
        sent=sent,
        received=received,
        reverse_sent=_optional_totals(end.get("sum_sent_bidir_reverse")),
        reverse_received=_optional_totals(end.get("sum_received_bidir_reverse")),
        udp=udp,
        streams=tuple(_stream(x) for x in forward),
        reverse_streams=tuple(_stream(x) for x in backward),
        intervals=intervals,
        cpu=_cpu(end.get("cpu_utilization_percent")),
        sender_congestion=_str_or_none(end.get("sender_tcp_congestion")),
        receiver_congestion=_str_or_none(end.get("receiver_tcp_congestion")),
        error=error_text or None,
        omitted_flagged=flagged,
    )


def _totals(end: Mapping[str, Any], protocol: str) -> tuple[Totals | None, Totals | None, UdpTotals | None]:
    sent = _optional_totals(end.get("sum_sent"))
    received = _optional_totals(end.get("sum_received"))
    # A zero opposite a non-zero count is an end that did not report (macOS ``-R`` clients,
    # ``-n`` runs whose server stopped counting), not a measured zero.
    if sent is not None and received is not None:
        if sent.bytes == 0 < received.bytes:
            sent = None
        elif received.bytes == 0 < sent.bytes:
            received = None
    udp = None
    summary = end.get("sum")
    if protocol == "UDP" and isinstance(summary, Mapping):
        # 3.11+ puts the receiver's loss and jitter in sum_received; before, only in sum.
        receiver = end.get("sum_received")
        udp = _udp(receiver) if isinstance(receiver, Mapping) else None
        udp = udp or _udp(summary)
        if sent is None:
            # Before 3.11 UDP ``end.sum`` is the sender's count; the loss fields are the
            # receiver's.  Received bytes follow from the loss when no receiver sum exists.
            sent = _optional_totals(summary)
    return sent, received, udp


def _optional_totals(value: Any) -> Totals | None:
    if not isinstance(value, Mapping) or "bytes" not in value:
        return None
    retransmits = value.get("retransmits")
    return Totals(
        bytes=int(_num(value.get("bytes"), 0)),
        seconds=_num(value.get("seconds"), _num(value.get("end"), 0.0) - _num(value.get("start"), 0.0)),
        bits_per_second=_num(value.get("bits_per_second"), 0.0),
        retransmits=int(retransmits) if isinstance(retransmits, int | float) else None,
    )


def _udp(value: Mapping[str, Any]) -> UdpTotals | None:
    if "lost_packets" not in value and "jitter_ms" not in value:
        return None
    return UdpTotals(
        jitter_ms=_num(value.get("jitter_ms"), 0.0),
        lost_packets=int(_num(value.get("lost_packets"), 0)),
        packets=int(_num(value.get("packets"), 0)),
        lost_percent=_num(value.get("lost_percent"), 0.0),
    )


def _sender_flag(stream: Mapping[str, Any]) -> bool | None:
    """The ``sender`` flag of an end stream (3.7+), None where the version has none."""
    for block in ("sender", "udp"):
        flag = _mapping(stream.get(block)).get("sender")
        if isinstance(flag, bool):
            return flag
    return None


def _stream(value: Any) -> StreamResult:
    stream = _mapping(value)
    sender = _mapping(stream.get("sender"))
    receiver = _mapping(stream.get("receiver"))
    udp_block = _mapping(stream.get("udp"))
    socket = sender.get("socket", receiver.get("socket", udp_block.get("socket", 0)))
    rtt_max = sender.get("max_rtt")
    rtt_mean = sender.get("mean_rtt")
    return StreamResult(
        socket=int(_num(socket, 0)),
        sent=_optional_totals(sender) if sender else _optional_totals(udp_block),
        received=_optional_totals(receiver),
        udp=_udp(udp_block) if udp_block else None,
        max_rtt_us=int(rtt_max) if isinstance(rtt_max, int | float) else None,
        mean_rtt_us=int(rtt_mean) if isinstance(rtt_mean, int | float) else None,
    )


def _intervals(value: Any, omit: float) -> tuple[tuple[IntervalSample, ...], bool]:
    """Intervals, with warm-up ones told apart.

    Versions before 3.1 write no ``omitted`` flag; their output then counts every interval
    as measured, which the returned ``flagged`` boolean makes visible.
    """
    samples: list[IntervalSample] = []
    flagged = False
    for raw in _list(value):
        interval = _mapping(raw)
        total = _mapping(interval.get("sum"))
        if not total:
            continue
        flagged = flagged or "omitted" in total
        retransmits = total.get("retransmits")
        start, end = _num(total.get("start"), 0.0), _num(total.get("end"), 0.0)
        seconds = _num(total.get("seconds"), end - start)
        omitted = bool(total.get("omitted", False))
        bits = _num(total.get("bits_per_second"), 0.0)
        scale = 1.0
        if not omitted and samples and samples[-1].omitted and seconds > 0 and end - start < 0.5 * seconds:
            # iperf3 (3.9 and 3.12 seen) with -O 2 or more reports the first measured second
            # with the restarted clock (1.000048-1.000115) and "seconds" counting the last
            # warm-up second too (2.0): its bits_per_second reads half the true rate (a
            # 474 Mbit/s dip in every run here).  Its bytes are one second's, and iperf3's
            # own totals count them so: take off the warm-up second it added.
            corrected = seconds - samples[-1].seconds
            if corrected > 0.1:
                scale = seconds / corrected
                seconds = corrected
                bits = 8.0 * _num(total.get("bytes"), 0) / seconds
        samples.append(
            IntervalSample(
                start=start,
                end=end,
                seconds=seconds,
                bytes=int(_num(total.get("bytes"), 0)),
                bits_per_second=bits,
                omitted=omitted,
                retransmits=int(retransmits) if isinstance(retransmits, int | float) else None,
                stream_bits_per_second=tuple(
                    scale * _num(_mapping(s).get("bits_per_second"), 0.0)
                    for s in _list(interval.get("streams"))
                ),
            )
        )
    return tuple(samples), flagged or omit == 0


def _cpu(value: Any) -> CpuUtilization | None:
    cpu = _mapping(value)
    if not cpu:
        return None
    return CpuUtilization(
        host_total=_num(cpu.get("host_total"), 0.0),
        host_user=_num(cpu.get("host_user"), 0.0),
        host_system=_num(cpu.get("host_system"), 0.0),
        remote_total=_num(cpu.get("remote_total"), 0.0),
        remote_user=_num(cpu.get("remote_user"), 0.0),
        remote_system=_num(cpu.get("remote_system"), 0.0),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _num(value: Any, default: float) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return default


def _str_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, str) else None
