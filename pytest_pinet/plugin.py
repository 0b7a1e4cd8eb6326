"""pytest entry point of pytest-pinet: options, markers, header, lab lifecycle, summary.

The plugin is thin: it turns options into :class:`PinetSettings`, keeps one
:class:`PinetRun` in ``config.stash`` and leaves the work to the core packages.  Fixtures
live in :mod:`pytest_pinet.fixtures`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

from . import __version__
from .errors import ConfigError, LabFault, PinetError
from .lab.place_keeper import PlaceKeeper
from .measurement import Measurement
from .record.results_dir import ResultsDir, new_run_id
from .record.routing_tables import routing_tables, storage_table, udp_table
from .record.store import ResultsStore
from .secrets import mask
from .secrets import register as register_secret
from .settings import (
    VIRTUAL,
    PinetSettings,
    coordinator_address,
    layered,
    non_negative_int,
    place_tags,
    positive_int,
)
from .virtlab import lifecycle
from .virtlab.qemu_image import DEFAULT_KERNEL, KERNELS
from .virtlab.topology import ACCELERATORS, BOARD_KINDS, LAB_NAME

MARKERS = {
    "ethernet": "built-in or adapter Ethernet throughput between a board and a peer",
    "half_duplex": "one end sends, the other receives",
    "full_duplex": "both ends send at once",
    "routing": "traffic routed through the board between two peers",
    "usb_adapter": "USB Ethernet adapters of the board",
    "udp": "UDP packet rates",
    "storage": "USB disk throughput",
    "qemu_board": "the QEMU board itself: labgrid power-cycle, serial console, USB devices",
}

pytest_plugins = [
    "pytest_pinet.fixtures",
    "pytest_pinet.fixtures_routing",
    "pytest_pinet.fixtures_udp",
    "pytest_pinet.fixtures_storage",
]


class PinetRun:
    """State of one pytest run shared by hooks and fixtures."""

    def __init__(self, settings: PinetSettings, run_id: str, is_worker: bool) -> None:
        self.settings = settings
        self.run_id = run_id
        self.is_worker = is_worker
        self.results = ResultsDir(settings.results, run_id)
        self.spec = settings.lab_spec()
        self.lab_error: str | None = None
        self._store: ResultsStore | None = None
        self.row_ids: dict[int, int] = {}  # id(Measurement) -> store row
        self.strategies: dict[str, Any] = {}  # board name -> its labgrid strategy, per process
        self.places = PlaceKeeper(settings, run_id, self.results)

    @property
    def store(self) -> ResultsStore:
        """The results store, opened on first use (each xdist worker opens its own)."""
        if self._store is None:
            url = self.settings.db or f"sqlite:///{self.settings.results / 'pinet.sqlite'}"
            self._store = ResultsStore(url)
        return self._store

    def record(self, measurement: Measurement) -> Path:
        """Commit a measurement to the results files and the store; return its raw directory."""
        raw_dir = self.results.record(measurement)
        self.store.add_run(self.run_id, measurement.context.lab, __version__)
        self.row_ids[id(measurement)] = self.store.add(self.run_id, measurement, __version__)
        return raw_dir

    def env_file(self) -> Path:
        """The labgrid env file of this process's place, taking the place on first need
        (and building it, for a virtual place)."""
        place = self.places.take()
        if place.source == "virtual":
            self.spec = dataclasses.replace(self.spec, name=place.name)
            return lifecycle.ensure_up(self.spec, self.run_id)
        assert place.env_file is not None
        return place.env_file

    def release_lab(self) -> None:
        """Give back what the run took: its places, and the virtual labs it built (unless kept).

        Called by every process; the controller also releases what a killed worker held.
        """
        self.places.release()
        if self.is_worker:
            return
        self.places.release_leftovers()
        if not self.settings.virtual or os.geteuid() != 0:
            return
        if self.settings.keep_lab:
            for kept in lifecycle.owned_labs(self.spec, self.run_id):
                lifecycle.disown(kept)
        else:
            lifecycle.release_all(self.spec, self.run_id)


PINET_RUN = pytest.StashKey[PinetRun]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``pinet`` option group and its ini keys."""
    group = parser.getgroup("pinet", "network regression testing of boards (pytest-pinet)")
    group.addoption(
        "--pinet-lab",
        default=None,
        metavar="ENV|virtual",
        help="labgrid env file of the lab, or 'virtual' for the namespace lab (default)",
    )
    group.addoption(
        "--pinet-results",
        default=None,
        metavar="DIR",
        help="directory for measurements and raw outputs (default: results)",
    )
    group.addoption(
        "--pinet-thresholds",
        default=None,
        metavar="FILE",
        help="thresholds file (default: lab/thresholds.yaml under the rootdir)",
    )
    group.addoption(
        "--pinet-profiles",
        default=None,
        metavar="FILE",
        help="tuning profiles file (default: lab/profiles.yaml under the rootdir)",
    )
    group.addoption(
        "--pinet-duration",
        default=None,
        metavar="S",
        help="seconds of measured traffic per run (default 20; the seed used 60)",
    )
    group.addoption(
        "--pinet-omit",
        default=None,
        metavar="S",
        help="warm-up seconds left out of the figures (default 2; the seed used 5)",
    )
    group.addoption("--pinet-streams", default=None, metavar="N", help="parallel TCP streams (default 10)")
    group.addoption(
        "--pinet-remeasure",
        default=None,
        metavar="N",
        help="measure again up to N times when a result is below its threshold; every attempt is "
        "recorded (default 1 on the virtual lab, whose host is shared, 0 on hardware)",
    )
    group.addoption(
        "--pinet-db",
        default=None,
        metavar="URL",
        help="results store: sqlite:///PATH (default: pinet.sqlite in the results directory) "
        "or postgresql://USER:PASSWORD@HOST/DB for a lab's shared store",
    )
    group.addoption(
        "--pinet-virtual-lab",
        default=None,
        metavar="NAME",
        help="which virtual lab to build and use: pinet (default), pinet1, ... pinet99",
    )
    group.addoption(
        "--pinet-places",
        default=None,
        metavar="N",
        help="virtual places pinet1..pinetN; each pytest process takes a free one, an xdist worker "
        "gwK first pinet(K+1) (default: one per xdist worker)",
    )
    group.addoption(
        "--pinet-coordinator",
        default=None,
        metavar="HOST:PORT",
        help="reserve this process's place from a labgrid coordinator (with --pinet-place-tags); "
        "--pinet-lab then names the env file, or a directory of PLACE.yaml env files",
    )
    group.addoption(
        "--pinet-place-tags",
        default=None,
        metavar="K=V,...",
        help="tags a place reserved from the coordinator must carry, e.g. board=rpi4,pinet=yes",
    )
    group.addoption(
        "--pinet-board",
        default=None,
        metavar="netns|qemu",
        help="the virtual lab's board: a network namespace (default) or a QEMU machine with its own "
        "kernel, serial console and USB devices",
    )
    group.addoption(
        "--pinet-board-kernel",
        default=None,
        metavar="LABEL",
        help="the QEMU board's kernel: 6.1 (default) or 6.12",
    )
    group.addoption(
        "--pinet-qemu-accel",
        default=None,
        metavar="tcg|kvm",
        help="how QEMU runs the board: tcg, software emulation (default), or kvm",
    )
    group.addoption(
        "--pinet-baseline-window",
        default=None,
        metavar="N",
        help="baseline = median of the last N results of the same context (default 10)",
    )
    group.addoption(
        "--pinet-baseline-min",
        default=None,
        metavar="N",
        help="judge against a baseline only with at least N earlier results (default 2)",
    )
    group.addoption(
        "--pinet-baseline-band",
        default=None,
        metavar="PCT",
        help="smallest band around the baseline in percent (default 1.0); else 3 x the spread",
    )
    group.addoption(
        "--pinet-adaptive",
        default=None,
        metavar="on|off",
        help="stop a run early once its per-second goodput settled (default on); off = always "
        "the full --pinet-duration, the seeds' fixed method",
    )
    group.addoption(
        "--pinet-adaptive-min",
        default=None,
        metavar="S",
        help="measured seconds before an adaptive run may stop (default 5)",
    )
    group.addoption(
        "--pinet-adaptive-precision",
        default=None,
        metavar="PCT",
        help="stop when the 95%% confidence half-width of the mean is within PCT %% (default 0.5)",
    )
    group.addoption(
        "--pinet-udp-duration",
        default=None,
        metavar="S",
        help="seconds per UDP packet-rate run; a sweep runs one per mode and thread count (default 5)",
    )
    group.addoption(
        "--pinet-storage-mib",
        default=None,
        metavar="MIB",
        help="MiB written and read back per block size in the storage sweep (default 8)",
    )
    group.addoption(
        "--pinet-max-temp",
        default=None,
        metavar="C",
        help="a measurement with the board above C degrees or throttling is invalid, not judged (default 80)",
    )
    group.addoption(
        "--pinet-keep-lab",
        action="store_true",
        default=False,
        help="leave a virtual lab this run built running afterwards",
    )
    for name, text in (
        ("pinet_lab", "default for --pinet-lab"),
        ("pinet_results", "default for --pinet-results"),
        ("pinet_thresholds", "default for --pinet-thresholds"),
        ("pinet_profiles", "default for --pinet-profiles"),
        ("pinet_duration", "default for --pinet-duration"),
        ("pinet_omit", "default for --pinet-omit"),
        ("pinet_streams", "default for --pinet-streams"),
        ("pinet_adaptive", "default for --pinet-adaptive"),
        ("pinet_max_temp", "default for --pinet-max-temp"),
        ("pinet_udp_duration", "default for --pinet-udp-duration"),
        ("pinet_storage_mib", "default for --pinet-storage-mib"),
        ("pinet_adaptive_min", "default for --pinet-adaptive-min"),
        ("pinet_adaptive_precision", "default for --pinet-adaptive-precision"),
        ("pinet_remeasure", "default for --pinet-remeasure"),
        ("pinet_db", "default for --pinet-db"),
        ("pinet_virtual_lab", "default for --pinet-virtual-lab"),
        ("pinet_board", "default for --pinet-board"),
        ("pinet_places", "default for --pinet-places"),
        ("pinet_coordinator", "default for --pinet-coordinator"),
        ("pinet_place_tags", "default for --pinet-place-tags"),
        ("pinet_board_kernel", "default for --pinet-board-kernel"),
        ("pinet_qemu_accel", "default for --pinet-qemu-accel"),
        ("pinet_baseline_window", "default for --pinet-baseline-window"),
        ("pinet_baseline_min", "default for --pinet-baseline-min"),
        ("pinet_baseline_band", "default for --pinet-baseline-band"),
    ):
        parser.addini(name, text, default="")


def _settings(config: pytest.Config) -> PinetSettings:
    root = Path(str(config.rootpath))

    def ini(name: str) -> str | None:
        value = config.getini(f"pinet_{name}")
        return str(value) if value else None

    def opt(name: str) -> str | None:
        value = config.getoption(f"--pinet-{name}")
        return str(value) if value is not None else None

    def lab_value(value: str, source: str) -> str:
        if value == VIRTUAL:
            return value
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if len(parts) == 1 and Path(parts[0]).is_dir():
            return str(Path(parts[0]).resolve())  # one env file per place, for a coordinator
        for part in parts:
            if not Path(part).is_file():
                raise ConfigError(
                    source,
                    f"lab env file {part!r} does not exist",
                    "give a labgrid env file, several separated by commas (one per place), or 'virtual'",
                )
        if not parts:
            raise ConfigError(source, "no env file given", "give a labgrid env file or 'virtual'")
        return ",".join(str(Path(part).resolve()) for part in parts)

    def places_value(value: str, source: str) -> int:
        number = non_negative_int(value, source)
        if number > 99:
            raise ConfigError(source, f"at most 99 virtual places (pinet1..pinet99), got {number}")
        return number

    def path_value(value: str, source: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else root / path

    def percent(value: str, source: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(source, f"expected a percentage, got {value!r}") from None
        if not 0 <= number < 100:
            raise ConfigError(source, f"must be 0..100, got {number}")
        return number

    def one_of(choices: tuple[str, ...]) -> Callable[[str, str], str]:
        def parse(value: str, source: str) -> str:
            if value not in choices:
                raise ConfigError(source, f"expected one of {', '.join(choices)}, got {value!r}")
            return value

        return parse

    def on_off(value: str, source: str) -> bool:
        if value.lower() not in ("on", "off"):
            raise ConfigError(source, f"expected on or off, got {value!r}")
        return value.lower() == "on"

    def adaptive_min(value: str, source: str) -> int:
        number = positive_int(value, source)
        if number < 2:
            raise ConfigError(source, f"an adaptive run needs at least 2 measured seconds, got {number}")
        return number

    def precision(value: str, source: str) -> float:
        number = percent(value, source)
        if not 0 < number <= 50:
            raise ConfigError(source, f"must be more than 0 and at most 50, got {number}")
        return number

    def temperature(value: str, source: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(source, f"expected degrees Celsius, got {value!r}") from None
        if not 20 <= number <= 125:
            raise ConfigError(source, f"must be 20..125 degrees Celsius, got {number}")
        return number

    def lab_name(value: str, source: str) -> str:
        if not LAB_NAME.match(value):
            raise ConfigError(source, f"virtual lab name {value!r} must be pinet, pinet1 ... pinet99")
        return value

    def remeasure_value(value: str, source: str) -> int:
        if value == "":
            return 1 if setting("lab", VIRTUAL, lab_value) == VIRTUAL else 0
        return non_negative_int(value, source)

    def setting(name: str, default: str, parse: Callable[[str, str], Any]) -> Any:
        # --pinet-NAME-WITH-DASHES > PINET_NAME > ini pinet_NAME > default
        return layered(name, opt(name.replace("_", "-")), ini(name), default, parse)

    return PinetSettings(
        lab=setting("lab", VIRTUAL, lab_value),
        results=setting("results", "results", path_value),
        thresholds=setting("thresholds", "lab/thresholds.yaml", path_value),
        profiles=setting("profiles", "lab/profiles.yaml", path_value),
        duration=setting("duration", "20", positive_int),
        omit=setting("omit", "2", non_negative_int),
        streams=setting("streams", "10", positive_int),
        keep_lab=bool(config.getoption("--pinet-keep-lab")),
        db=setting("db", "", lambda value, source: value),
        baseline_window=setting("baseline_window", "10", positive_int),
        baseline_min=setting("baseline_min", "2", positive_int),
        baseline_band=setting("baseline_band", "1.0", percent),
        virtual_lab=setting("virtual_lab", "pinet", lab_name),
        remeasure=setting("remeasure", "", remeasure_value),
        adaptive=setting("adaptive", "on", on_off),
        adaptive_min=setting("adaptive_min", "5", adaptive_min),
        adaptive_precision=setting("adaptive_precision", "0.5", precision),
        max_temp=setting("max_temp", "80", temperature),
        udp_duration=setting("udp_duration", "5", positive_int),
        storage_mib=setting("storage_mib", "8", positive_int),
        board=setting("board", "netns", one_of(BOARD_KINDS)),
        board_kernel=setting("board_kernel", DEFAULT_KERNEL, one_of(tuple(KERNELS))),
        qemu_accel=setting("qemu_accel", "tcg", one_of(ACCELERATORS)),
        places=setting("places", "0", places_value),
        coordinator=setting("coordinator", "", coordinator_address),
        place_tags=setting("place_tags", "", place_tags),
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The adapter matrix: a ``usb_adapter`` test that asks for ``link_name`` runs once per
    link of the board, named by link, read from the env file (the virtual lab's plan for it
    is known without building it)."""
    if (
        "link_name" not in metafunc.fixturenames
        or metafunc.definition.get_closest_marker("usb_adapter") is None
    ):
        return
    run = metafunc.config.stash.get(PINET_RUN, None)
    if run is None:
        return
    settings = run.settings
    if settings.virtual:
        spec = settings.lab_spec()
        names = [link.name for link in spec.links if spec.host(link.board).role == "board"]
    else:
        from .lab.inventory import load_inventory

        files = [path for path in settings.lab_files if path.is_file()]
        if not files:
            return  # a directory of places' env files: the adapter matrix is the place's own
        names = [link.name for link in load_inventory(files[0]).links]
    metafunc.parametrize("link_name", names, ids=[f"link-{n}" for n in names])


def pytest_configure(config: pytest.Config) -> None:
    """Register markers, validate settings and create the run state."""
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    try:
        settings = _settings(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not settings.virtual:
        # A broken env file of a real lab is the user's to fix before anything runs.
        from .lab.inventory import load_inventory

        try:
            for path in settings.lab_files:
                if path.is_dir():
                    for place_env in sorted(path.glob("*.yaml")):
                        load_inventory(place_env)
                else:
                    load_inventory(path)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    if settings.db:
        from urllib.parse import urlsplit

        register_secret(urlsplit(settings.db).password)
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["pinet_run_id"] if workerinput else new_run_id()
    config.stash[PINET_RUN] = PinetRun(settings, run_id, workerinput is not None)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistBridge(run_id), "pinet-xdist-bridge")


class _XdistBridge:
    """Hands the controller's run id to every xdist worker (one lab owner per run)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["pinet_run_id"] = self.run_id


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which lab, thresholds and results directory this run uses."""
    run = config.stash[PINET_RUN]
    s = run.settings
    lab = "virtual (namespace lab, built on demand)" if s.virtual else s.lab
    return [
        f"pinet: lab {lab}",
        f"pinet: thresholds {s.thresholds}{'' if s.thresholds.is_file() else ' (missing!)'}",
        f"pinet: results {run.results.path}; iperf3 -P {s.streams} -t {s.duration} -O {s.omit}"
        + (
            f" (adaptive: stops once settled within {s.adaptive_precision} %, after {s.adaptive_min} s)"
            if s.settle_rule()
            else ""
        ),
    ]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every process gives its place back; the controller (or a plain run) also writes the
    run-level report files and tears down the labs the run built."""
    run = session.config.stash.get(PINET_RUN, None)
    if run is None:
        return
    if not run.is_worker:
        alluredir = getattr(session.config.option, "allure_report_dir", None)
        if alluredir:
            _write_allure_run_files(Path(alluredir), run)
    try:
        run.release_lab()
    except PinetError as exc:  # never hide the test results behind a teardown error
        run.lab_error = str(exc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Show a lab fault as one line with its category, not as a product traceback, and keep
    it as a fact of the run (recovery keeps the faults it handled itself)."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and isinstance(call.excinfo.value, LabFault):
        fault = call.excinfo.value
        report.longrepr = mask(f"{fault} [not a regression: the lab failed, see the evidence above]")
        report.user_properties.append(("pinet_lab_fault", fault.category))
        run = item.config.stash.get(PINET_RUN, None)
        if run is not None and not fault.recorded:
            fault.recorded = True
            run.results.record_fact(
                "lab-fault",
                {
                    "test_id": item.nodeid,
                    "phase": call.when,
                    "category": fault.category,
                    "host": fault.host,
                    "message": str(fault),
                    "recovered": False,
                    "action": "none",
                },
            )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print every measurement of the run: direction, goodput, expectation, limit."""
    run = config.stash.get(PINET_RUN, None)
    if run is None or run.is_worker:
        return
    rows = run.results.load()
    if rows:
        _measurement_summary(terminalreporter, rows)
        for line in routing_tables(rows) + udp_table(rows) + storage_table(rows):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"results: {run.results.measurements_file}")
    unsupported = {
        f"unsupported: {fact['host']} {fact['tunable']} ({fact.get('what', 'profile')} {fact['profile']}): "
        f"{fact['reason']}"
        for fact in run.results.load_facts()
        if fact.get("kind") == "unsupported-tunable"
    }
    for line in sorted(unsupported):
        terminalreporter.write_line(line)
    for line in lab_fault_lines(run.results.load_facts()):
        terminalreporter.write_line(line)
    if run.lab_error:
        terminalreporter.write_line(f"pinet: virtual lab teardown failed: {run.lab_error}", red=True)


def lab_fault_lines(facts: list[dict[str, Any]]) -> list[str]:
    """The run's lab faults: one line each, then the count by category and outcome."""
    faults = [fact for fact in facts if fact.get("kind") == "lab-fault"]
    if not faults:
        return []
    lines = []
    for fault in faults:
        test = str(fault.get("test_id", "")).rsplit("::", 1)[-1]
        outcome = "recovered" if fault.get("recovered") else "NOT recovered"
        lines.append(f"lab fault: {fault.get('category')} on {fault.get('host') or '?'} in {test}: {outcome}")
    recovered = sum(1 for fault in faults if fault.get("recovered"))
    categories = sorted({str(fault.get("category")) for fault in faults})
    lines.append(
        f"lab faults: {len(faults)} ({', '.join(categories)}); recovered by power-cycle and retry: "
        f"{recovered}; these are the lab's, not regressions of the boards"
    )
    return lines


def _ended(row: dict[str, Any]) -> str:
    """How long a run measured and what ended it: "7 s settled", "20 s fixed"."""
    seconds = row.get("measured_s")
    return f"{seconds:.0f} s {row.get('ended_by', 'fixed')}" if isinstance(seconds, int | float) else ""


def _measurement_summary(terminalreporter: Any, rows: list[dict[str, Any]]) -> None:
    """Table of goodputs, the hosts' load during each run, and the boards' facts."""
    terminalreporter.section("pinet measurements")
    terminalreporter.write_line(
        f"{'test':34} {'profile':20} {'direction':12} {'duplex':6} {'Mbit/s':>8} {'limit':>7} {'retr':>6} "
        f"{'measured':>14}"
    )
    seen_observations = set()
    load_lines = []
    boards = {}
    for row in rows:
        context = row.get("context", {})
        name = str(row["test_id"]).rsplit("::", 1)[-1].split("[", 1)[0]
        retr = row.get("retransmits")
        terminalreporter.write_line(
            f"{name[:34]:34} {context.get('profile', ''):20} {context.get('direction', ''):12} "
            f"{context.get('duplex', ''):6} {float(row['goodput_mbps']):8.1f} "
            f"{float(row['limit_mbps']):7.1f} {'-' if retr is None else retr:>6} {_ended(row):>14}"
        )
        run_key = str(row["test_id"]).split("#", 1)[0]
        if run_key not in seen_observations:
            seen_observations.add(run_key)
            for obs in row.get("observations") or []:
                cores = [c for c in obs.get("cpu", []) if c["cpu"] != "cpu"]
                busiest = max(cores, key=lambda c: c["busy"]) if cores else None
                nic = obs.get("nic", {})
                load_lines.append(
                    f"  {run_key.rsplit('::', 1)[-1][:52]:52} {obs['host']}:{obs['interface']:6} "
                    + (
                        f"{busiest['cpu']} {busiest['busy']:3.0f}% (softirq {busiest['softirq']:2.0f}%) "
                        if busiest
                        else ""
                    )
                    + f"rx {nic.get('rx_packets', 0):>8} tx {nic.get('tx_packets', 0):>8} pkts, "
                    + f"drops {nic.get('rx_dropped', 0) + nic.get('tx_dropped', 0)}"
                )
        facts = row.get("facts")
        if isinstance(facts, dict) and isinstance(facts.get("board"), dict):
            board = facts["board"]
            boards[board.get("host")] = (
                f"board {board.get('host')}: {board.get('os_name') or '?'}, kernel {board.get('kernel')}, "
                f"{board.get('cpus')} CPUs, {board.get('iperf3_version') or 'iperf3 ?'}"
            )
    if load_lines:
        terminalreporter.write_line("load during the runs (busiest core, NIC packets):")
        for line in load_lines:
            terminalreporter.write_line(line)
    for line in boards.values():
        terminalreporter.write_line(line)


def _write_allure_run_files(alluredir: Path, run: PinetRun) -> None:
    """environment.properties, executor.json, categories.json: once, by the controller."""
    from .record.allure_out import write_run_files

    rows = run.results.load()
    environment = {
        "pinet.version": __version__,
        "lab": "virtual" if run.settings.virtual else run.settings.lab,
        "thresholds": str(run.settings.thresholds),
        "run": run.run_id,
    }
    for row in rows:
        board = (row.get("facts") or {}).get("board") or {}
        if board:
            host = board.get("host", "board")
            environment[f"{host}.kernel"] = board.get("kernel", "")
            environment[f"{host}.os"] = board.get("os_name", "")
            environment[f"{host}.iperf3"] = board.get("iperf3_version", "")
    executor = {
        "name": "pytest-pinet",
        "type": "pytest",
        "buildName": run.run_id,
        "reportName": "pytest-pinet",
    }
    write_run_files(alluredir, environment, executor)
