"""Cables made worse on purpose, as real ones go bad: slower by a percentage (a planted
regression), noisy (the jitter process), one cable negotiating a lower speed, deeper queues
(a planted latency regression).  ``pinet lab degrade`` calls these; ``lab.down`` undoes them
with the lab."""

from __future__ import annotations

import json

from ..errors import PinetError
from . import jitter, shaping, system
from .topology import COMPANION_NAMES, LabSpec, LinkSpec, parts
from .virtual_lab import is_qemu_board, is_up

DEFAULT_QUEUE_PACKETS = 1000  # a veth's txqueuelen, as an Ethernet NIC's


def labs_of(spec: LabSpec) -> list[LabSpec]:
    """The labs whose cables a command changes: the lab itself, or both parts of a two-board
    lab (the namespace board's and the QEMU board's, each with its own namespaces and state;
    the QEMU part only when it was built: a machine without QEMU has the namespace part alone)."""
    if not spec.is_pair:
        return [spec]
    if not is_up(spec):
        raise PinetError(f"virtual lab {spec.name} is not up: run `pinet lab up` first")
    netns, qemu = parts(spec)
    return [netns, qemu] if is_up(qemu) else [netns]


def _restoring(changes: list[tuple[str, str, list[str]]]) -> None:
    """Put back each cable end changed before a failure (``(netns, device, tc args)`` of its
    state before): a command that fails part-way leaves no cable half changed."""
    for netns, device, args in reversed(changes):
        try:
            system.run([system.find_tool("tc"), "qdisc", "change", "dev", device, "root", *args], netns=netns)
        except PinetError:
            pass  # the failure that brought us here is the one to report


def deepen_queues(spec: LabSpec, packets: int) -> list[str]:
    """Give every emulated cable end a device queue of ``packets`` (txqueuelen).

    The planted latency regression: pfifo_fast (and every FIFO the kernel sizes by the device)
    then holds ``packets`` frames, so a full queue at link rate R adds packets x 1538 B x 8 / R
    to a round trip.  A qdisc takes the length when it is created: the routing suite puts
    its qdisc under test on the board afresh for every test, so the next test sees it.
    """
    system.require_root("pinet lab degrade --queue-packets")
    if not 1 <= packets <= 100_000:
        raise PinetError(f"queue packets must be 1..100000, got {packets}")
    if spec.is_pair:
        return [f"{part.name}: {line}" for part in labs_of(spec) for line in deepen_queues(part, packets)]
    if not is_up(spec):
        raise PinetError(f"virtual lab {spec.name} is not up: run `pinet lab up` first")
    changed = []
    for link in spec.links:
        ends = [(link.board, link.board_interface), (link.peer, link.peer_interface)]
        if is_qemu_board(spec, link.board):
            ends = ends[1:]  # the board's own NIC is inside the QEMU machine
        for host, device in ends:
            system.run(
                [system.find_tool("ip"), "link", "set", "dev", device, "txqueuelen", str(packets)],
                netns=spec.netns(host),
            )
            changed.append(f"{host}:{device} txqueuelen {packets}")
    (spec.state_dir / "queue.json").write_text(json.dumps({"packets": packets}), encoding="utf-8")
    return changed


def degrade(
    spec: LabSpec,
    percent: float,
    jitter_pct: float = 0.0,
    hold_s: float = 10.0,
    seconds_pct: float | None = None,
) -> list[str]:
    """Slow every emulated cable of the lab by ``percent`` (0 restores the calibrated rate).

    This is the knob that lets a test (or a person) produce a known regression: three runs,
    the third on a link a few percent slower, must show up as a drop in the trends.  With
    ``jitter_pct`` the rate also varies by that spread, run to run (a level held ``hold_s``
    seconds) and second to second (:mod:`.jitter`); ``seconds_pct`` sets the second-to-second
    part apart (None: the same as the run-to-run one). Both 0 stop the variation.
    """
    seconds = jitter_pct if seconds_pct is None else seconds_pct
    system.require_root("pinet lab degrade")
    if not 0 <= percent < 100:
        raise PinetError(f"degrade percent must be 0..99, got {percent}")
    for what, value in (("jitter", jitter_pct), ("second-to-second jitter", seconds)):
        if not 0 <= value <= 20:
            raise PinetError(f"{what} percent must be 0..20, got {value}")
    if spec.is_pair:
        return [
            f"{part.name}: {line}"
            for part in labs_of(spec)
            for line in degrade(part, percent, jitter_pct, hold_s, seconds)
        ]
    if not is_up(spec):
        raise PinetError(f"virtual lab {spec.name} is not up: run `pinet lab up` first")
    jitter.stop(spec.state_dir)
    before = _degraded_percent(spec)
    cables: list[jitter.CableEnd] = []
    changed: list[str] = []
    done: list[tuple[str, str, list[str]]] = []
    for link in spec.links:
        # a cable made bad by --link-speed stays bad
        for host, device, speed in shaped_ends(spec, link, cable_speed(spec, link)):
            shaper = shaping.Shaping(
                speed, link.mtu, calibration=shaping.DEFAULT_CALIBRATION * (1 - percent / 100.0)
            )
            try:
                system.run(
                    [system.find_tool("tc"), "qdisc", "change", "dev", device, "root", *shaper.tc_args()],
                    netns=spec.netns(host),
                )
            except PinetError:
                _restoring(done)
                raise
            was = shaping.Shaping(
                speed, link.mtu, calibration=shaping.DEFAULT_CALIBRATION * (1 - before / 100.0)
            )
            done.append((spec.netns(host), device, was.tc_args()))
            changed.append(f"{host}:{device} {shaper.rate_kbit} kbit/s")
            cables.append(jitter.CableEnd(spec.netns(host), device, speed, link.mtu))
    if jitter_pct > 0 or seconds > 0:
        pid = jitter.start(spec.state_dir, cables, percent, jitter.NoiseModel(jitter_pct, hold_s, seconds))
        changed.append(
            f"jitter {jitter_pct:g} % run to run ({hold_s:g} s levels) and {seconds:g} % second to second, "
            f"pid {pid}"
        )
    state = {"percent": percent, "jitter_pct": jitter_pct, "hold_s": hold_s, "seconds_pct": seconds}
    (spec.state_dir / "degrade.json").write_text(json.dumps(state), encoding="utf-8")
    return changed


def degrade_link_speed(spec: LabSpec, speed_mbps: int, link_name: str | None = None) -> list[str]:
    """Make one emulated cable negotiate like a bad one: shaped to ``speed_mbps`` and reporting
    it (0 gives it back its own speed).  The first link when ``link_name`` is None.

    The cable stays so across power-cycles of its hosts, as a bad cable does: the health check
    finds it before the link's tests measure (docs/lab-health.md).
    """
    system.require_root("pinet lab degrade")
    if spec.is_pair:
        netns_part, *qemu_part = labs_of(spec)
        theirs = {v: k for k, v in COMPANION_NAMES.items()}  # the pair's name -> the QEMU lab's
        part, name = (
            (qemu_part[0], theirs[link_name])
            if qemu_part and link_name in theirs
            else (netns_part, link_name)
        )
        return [f"{part.name}: {line}" for line in degrade_link_speed(part, speed_mbps, name)]
    if not is_up(spec):
        raise PinetError(f"virtual lab {spec.name} is not up: run `pinet lab up` first")
    names = [link.name for link in spec.links]
    chosen = [link for link in spec.links if link_name in (None, link.name)][:1]
    if not chosen:
        raise PinetError(f"virtual lab {spec.name} has no link {link_name!r} (links: {', '.join(names)})")
    if not 0 <= speed_mbps <= 100_000:
        raise PinetError(f"link speed must be 1..100000 Mbit/s (0: the link's own), got {speed_mbps}")
    link = chosen[0]
    speed = speed_mbps or link.speed_mbps
    changed = []
    for host, device, shaped in shaped_ends(spec, link, speed):
        shaper = shaping.Shaping(shaped, link.mtu)
        system.run(
            [system.find_tool("tc"), "qdisc", "change", "dev", device, "root", *shaper.tc_args()],
            netns=spec.netns(host),
        )
        port = link.board_interface if host == link.board else link.peer_interface
        shaping.label(spec.netns(host), port, speed)
        changed.append(f"{link.name}: {host}:{device} shaped to {shaped}, reporting {speed} Mbit/s")
    speeds = _cable_speeds(spec)
    speeds.pop(link.name, None)
    if speed != link.speed_mbps:
        speeds[link.name] = speed
    (spec.state_dir / LINK_SPEEDS).write_text(json.dumps(speeds), encoding="utf-8")
    if (spec.state_dir / jitter.PID_FILE).exists():
        # The noise process shapes every cable each second at the speed it started with: it
        # starts again at the speeds now, or it would undo this cable's in a second.
        state = json.loads((spec.state_dir / "degrade.json").read_text(encoding="utf-8"))
        changed += degrade(
            spec,
            float(state["percent"]),
            float(state["jitter_pct"]),
            float(state["hold_s"]),
            float(state.get("seconds_pct", state["jitter_pct"])),
        )
    return changed


def shaped_ends(spec: LabSpec, link: LinkSpec, speed: int) -> list[tuple[str, str, int]]:
    """(host, the device whose root shaper carries it, its speed) of each end of ``link`` that
    is shaped from here at cable speed ``speed``: not a QEMU board's own port (shaped inside the
    machine); a board port behind a one-way bus on that bus's device, at the slower of the two."""
    ends = [(link.board, link.board_interface, speed), (link.peer, link.peer_interface, speed)]
    if is_qemu_board(spec, link.board):
        return ends[1:]
    if link.port_mbps:
        ends[0] = (link.board, shaping.bus_device(link.board_interface), min(speed, link.port_mbps))
    return ends


LINK_SPEEDS = "link-speeds.json"  # the cables `degrade --link-speed` made negotiate otherwise


def _degraded_percent(spec: LabSpec) -> float:
    """How much slower the lab's cables are now (``degrade --percent``; 0: calibrated)."""
    try:
        return float(json.loads((spec.state_dir / "degrade.json").read_text(encoding="utf-8"))["percent"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _cable_speeds(spec: LabSpec) -> dict[str, int]:
    try:
        data = json.loads((spec.state_dir / LINK_SPEEDS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}


def cable_speed(spec: LabSpec, link: LinkSpec) -> int:
    """The speed ``link`` is shaped to now: its own, unless ``degrade --link-speed`` changed it."""
    return _cable_speeds(spec).get(link.name, link.speed_mbps)
