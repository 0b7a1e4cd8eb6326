"""The ``pinet`` command: manage the virtual lab and run the suite.

Every error a user can cause (not root, missing tool, bad file) ends as one line on stderr
and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import __version__
from ..errors import PinetError
from ..record.data_home import allure_history_file, store_url
from ..secrets import mask
from ..secrets import register as register_secret
from ..virtlab import lab
from ..virtlab.qemu_image import DEFAULT_IMAGE, RECIPES
from ..virtlab.topology import ACCELERATORS, BOARD_KINDS, LabSpec, lab_spec
from .history import add_history_commands


def _spec(args: argparse.Namespace) -> LabSpec:
    """The lab plan: as asked (``lab up --board``), else as the running lab was built."""
    try:
        state_root = Path(args.state_root) if args.state_root else None
        board = getattr(args, "board", None)
        if board is None:
            plain = (
                LabSpec(name=args.lab)
                if state_root is None
                else LabSpec(name=args.lab, state_root=state_root)
            )
            built = lab.built_as(plain)
            return lab_spec(
                args.lab,
                board=built.get("board") or "netns",
                image=built.get("image", ""),
                accel=built.get("accel") or "tcg",
                state_root=state_root,
            )
        return lab_spec(args.lab, board=board, image=args.image, accel=args.accel, state_root=state_root)
    except ValueError as exc:
        raise PinetError(str(exc)) from None


def cmd_lab_up(args: argparse.Namespace) -> int:
    if args.places:
        return _places_up(args)
    spec = _spec(args)
    started = time.monotonic()
    env_file = lab.up(spec, replace=args.replace)
    print(f"virtual lab {spec.name} up in {time.monotonic() - started:.1f} s; env file {env_file}")
    _print_status(lab.status(spec), as_json=False)
    if spec.is_qemu and args.boot_check:
        _check_qemu_board(env_file, spec.board_host.name)
    return 0


def _places_up(args: argparse.Namespace) -> int:
    """K independent labs pinet1..pinetK: own namespaces, addresses, keys and env file each."""
    if not 1 <= args.places <= 99:
        raise PinetError(f"--places must be 1..99, got {args.places}")
    for number in range(1, args.places + 1):
        args.lab = f"pinet{number}"
        spec = _spec(args)
        started = time.monotonic()
        env_file = lab.up(spec, replace=args.replace)
        print(f"place {spec.name} up in {time.monotonic() - started:.1f} s; env file {env_file}")
        if spec.is_qemu and args.boot_check:
            _check_qemu_board(env_file, spec.board_host.name)
    print(
        f"{args.places} places up; run `pytest -n {args.places}` (each worker takes its own) "
        "and `pinet lab down` to remove them"
    )
    return 0


def cmd_lab_export(args: argparse.Namespace) -> int:
    """Write exporter and RemotePlace env files for places pinet1..K; register them."""
    from ..lab.coordinator import Client
    from ..virtlab.coordinator_export import DEFAULT_TAGS, register_places, write_export

    specs = []
    for number in range(1, args.places + 1):
        args.lab = f"pinet{number}"
        specs.append(_spec(args))
    out = Path(args.out)
    for path in write_export(specs, out):
        print(f"wrote {path}")
    if args.coordinator:
        register_places(Client(args.coordinator), specs, args.exporter_name, DEFAULT_TAGS)
        print(f"places {', '.join(s.name for s in specs)} registered on {args.coordinator}")
    print(
        f"serve them: labgrid-exporter -c {args.coordinator or 'HOST:PORT'} -n {args.exporter_name} "
        f"{out / 'exporter.yaml'}\nuse them: pytest -n {args.places} --pinet-coordinator "
        f"{args.coordinator or 'HOST:PORT'} --pinet-place-tags {DEFAULT_TAGS[0]} --pinet-lab {out / 'places'}"
    )
    return 0


def _check_qemu_board(env_file: Path, host: str) -> None:
    """Boot the QEMU board through labgrid, log in on its console, power-cycle it, reach it
    again, and switch it off: the proof that the lab's board works before a run needs it."""
    strategy, target = _board_strategy(env_file, host, wait=300.0)
    try:
        strategy.transition("reachable")
        print(
            f"{host}: booted kernel {strategy.console_kernel} through labgrid's QEMUDriver; "
            f"SSH after {strategy.boot_seconds:.1f} s, console login {strategy.console_login_seconds:.1f} s"
        )
        strategy.transition("off")
        strategy.transition("reachable")
        print(f"{host}: power-cycled through labgrid; SSH again after {strategy.boot_seconds:.1f} s")
        strategy.transition("off")
        print(f"{host}: off until a test run powers it on (it boots in the run's session)")
    finally:
        target.deactivate_all_drivers()


def _board_strategy(env_file: Path, host: str, wait: float) -> tuple[Any, Any]:
    """A PinetBoardStrategy for ``host`` of ``env_file``, with pinet's pinned SSH."""
    from labgrid import Environment

    from ..lab.inventory import load_inventory
    from ..lab.strategy import new_strategy

    if not env_file.exists():
        raise PinetError(f"{env_file} not found: run `pinet lab up` or pass --env FILE")
    inventory = load_inventory(env_file)
    if host not in inventory.hosts:
        raise PinetError(f"{env_file}: no host {host!r}; hosts: {sorted(inventory.hosts)}")
    target = Environment(config_file=str(env_file)).get_target(host)
    try:
        strategy = new_strategy(target, host)
    except Exception as exc:  # noqa: BLE001 - labgrid: no power driver, or one that fails to bind
        raise PinetError(f"{env_file}: {host} has no usable power driver ({exc})") from None
    strategy.remote = inventory.hosts[host].connect(connect_timeout=3)
    strategy.boot_timeout = wait
    return strategy, target


def _places_present(state_root: Path) -> set[str]:
    """Labs ``pinet lab up --places N`` made (pinet1..pinetN): by namespace or state directory."""
    found = {ns.split("-", 1)[0] for ns in lab.namespaces("pinet")}
    found |= {p.name for p in state_root.glob("pinet*") if p.is_dir()}
    return {name for name in found if name.removeprefix("pinet").isdigit()}


def cmd_lab_down(args: argparse.Namespace) -> int:
    """Undo what ``lab up`` made: the named lab, or (no --lab) the default lab and the places
    ``lab up --places`` made; ``--all`` every pinet lab of this machine."""
    state_root = Path(args.state_root) if args.state_root else LabSpec().state_root
    if args.all:
        names = sorted({ns.split("-", 1)[0] for ns in lab.namespaces("pinet")})
        names = sorted(set(names) | {p.name for p in state_root.glob("pinet*") if p.is_dir()})
    elif args.lab == "pinet":
        names = ["pinet", *sorted(_places_present(state_root), key=lambda n: int(n.removeprefix("pinet")))]
    else:
        names = [args.lab]
    for name in names or [args.lab]:
        args.lab = name
        report = lab.down(_spec(args))
        if report.nothing:
            print(f"virtual lab {name}: nothing to remove")
        else:
            print(
                f"virtual lab {name} down: removed {len(report.namespaces)} namespaces, "
                f"{len(report.links)} links, {report.processes} processes"
                + (f", {report.state_dir}" if report.state_dir else "")
            )
    return 0


def cmd_lab_status(args: argparse.Namespace) -> int:
    data = lab.status(_spec(args))
    _print_status(data, as_json=args.json)
    return 0 if data["up"] else 1


def _print_status(data: dict[str, object], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(data, indent=2))
        return
    board = data.get("board", "netns")
    image = f", image {data['image']}" if data.get("image") else ""
    print(
        f"lab {data['lab']}: {'up' if data['up'] else 'down'}  board {board}{image}  "
        f"env file: {data['env_file'] or '-'}"
    )
    for host in data["hosts"]:  # type: ignore[attr-defined]
        state = "present" if host["present"] else "absent"
        sshd = "sshd running" if host["sshd_running"] else "sshd stopped"
        if board == "qemu" and host["role"] == "board":
            sshd = "QEMU running" if host["sshd_running"] else "QEMU off (a test run boots it)"
        print(
            f"  host {host['name']:4} ({host['role']}) netns {host['netns']} {state}, {sshd}, "
            f"ssh {host['mgmt_address']}"
        )
        for line in host["interfaces"]:
            print(f"      {line}")
    for link in data["links"]:  # type: ignore[attr-defined]
        print(
            f"  link {link['name']}: {link['board']} <-> {link['peer']}  "
            f"{link['speed_mbps']} Mbit/s MTU {link['mtu']}"
        )
        for side in ("board", "peer"):
            if side == "board" and board == "qemu":
                print("      board egress: shaped inside the QEMU board")
            elif f"{side}_qdisc" in link:
                print(f"      {side} egress: {link[f'{side}_qdisc']}")


def cmd_lab_vhost_power(args: argparse.Namespace) -> int:
    """Switch a virtual host itself (what the virtual env's ExternalPowerDriver runs)."""
    spec = _spec(args)
    try:
        spec.host(args.host)
    except KeyError:
        raise PinetError(
            f"no host {args.host!r} in lab {spec.name}; hosts: {[h.name for h in spec.hosts]}"
        ) from None
    lab.power(spec, args.host, args.state)
    return 0


def cmd_lab_power(args: argparse.Namespace) -> int:
    """Power a host through labgrid's power driver of the env file (any lab)."""
    # An env whose power command calls `pinet lab power` again would recurse without end.
    if os.environ.get("PINET_POWER_NESTED"):
        raise PinetError(
            "pinet lab power called from a power command: the env file's power driver loops back"
        )
    os.environ["PINET_POWER_NESTED"] = "1"
    env_file = Path(args.env) if args.env else _spec(args).env_file
    strategy, target = _board_strategy(env_file, args.host, args.wait)
    try:
        if args.state == "cycle":
            strategy.transition("reachable")
            print(f"{args.host}: power cycled, reachable over SSH after {strategy.boot_seconds:.1f} s")
        else:
            strategy.transition(args.state)
            print(f"{args.host}: power {args.state}")
    finally:
        target.deactivate_all_drivers()
    return 0


def cmd_lab_degrade(args: argparse.Namespace) -> int:
    """Slow the virtual lab's cables by a percentage (0 = back to calibrated)."""
    percent = 0.0 if args.reset else args.percent
    for line in lab.degrade(_spec(args), percent):
        print(f"{line}" + (f" (degraded {percent:g} %)" if percent else " (calibrated)"))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Start-up, fidelity, overhead and adaptive-duration figures on a bench lab of its own."""
    from ..bench.run import format_table, run_bench, to_json

    data = run_bench(
        args.startups,
        args.fidelity_runs,
        args.overhead_repeats,
        args.duration,
        args.adaptive_repeats,
        args.fixed_duration,
        args.sensitivity_runs,
        args.sensitivity_history,
        args.sensitivity_duration,
    )
    print(to_json(data))
    print(format_table(data))
    return 0 if all(f["met"] is not False for f in data["figures"]) else 1


def cmd_lab_check(args: argparse.Namespace) -> int:
    """Validate a lab env file (pinet section and labgrid targets) with no hardware."""
    from ..lab.check import check_env_file

    inventory = check_env_file(args.env_file)
    print(f"{args.env_file}: valid lab {inventory.lab!r}")
    for host in inventory.hosts.values():
        ep = host.endpoint
        print(f"  {host.role:5} {host.name:10} ssh {ep.username}@{ep.address}:{ep.port}")
    for link in inventory.links:
        print(
            f"  link  {link.name:14} {link.board}:{link.board_interface} {link.board_address} <-> "
            f"{link.peer}:{link.peer_interface} {link.peer_address}  {link.adapter}, "
            f"{link.speed_mbps} Mbit/s, MTU {link.mtu}"
        )
    for route in inventory.routes:
        print(
            f"  route {route.name:14} {route.wan.peer} ({route.wan.name}) -> {route.board} -> "
            f"{route.lan.peer} ({route.lan.name})"
        )
    from ..lab.image_catalogue import problems

    catalogue = inventory.catalogue
    for image in catalogue.images:
        missing = problems(image)
        print(f"  image {image.describe()}" + (f"  NOT READY: {'; '.join(missing)}" if missing else ""))
    for board in inventory.boards:
        takes = [i.name for i in catalogue.images if catalogue.can_take(board.name, i)]
        how = (
            ", ".join(sorted(catalogue.deliveries.get(board.name, ())))
            or "no image delivery (no SD mux + writer, no TFTP)"
        )
        if catalogue.images:
            print(f"  board {board.name:10} takes {', '.join(takes) or 'none of the images'} ({how})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Build the Allure 3 report (history across runs, goodput metrics, trend charts)."""
    from ..record.report import build_report

    results = Path(args.results)
    index = build_report(
        Path(args.root).resolve(),
        results / "allure-results",
        results / "report",
        allure_history_file(),
        morning=last_night(results, store_url(os.environ.get("PINET_DB", ""))),
    )
    print(f"report: {index} (serve it: python3 -m http.server -d {index.parent} 8080 --bind 127.0.0.1)")
    return 0


SUITE = Path(__file__).parent / "suite"  # the network suite, shipped in the wheel


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: the network suite against the lab, then the report and a summary."""
    suite = Path(args.suite)
    if not suite.exists():
        raise PinetError(f"suite {suite} not found: pass --suite with a directory of tests")
    results = Path(args.results)
    # The store is named explicitly, so that nothing (a checkout's conftest that keeps its
    # own tests off the user's history) can point the main job elsewhere.
    db = store_url(os.environ.get("PINET_DB", ""))
    register_secret(urlsplit(db).password)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        str(suite),
        "-p",
        "no:cacheprovider",
        "--pinet-results",
        str(results),
        "--pinet-db",
        db,
        "--alluredir",
        str(results / "allure-results"),
        "--clean-alluredir",
        *args.pytest_args,
    ]
    print("+ " + mask(" ".join(argv)), flush=True)
    code = subprocess.call(argv)
    report_line = _main_job_report(args, results)
    _main_job_summary(results, db, code, report_line)
    return code


def cmd_bisect(args: argparse.Namespace) -> int:
    """The first image of an ordered list (good first, bad last) whose figures regress."""
    from .bisect_images import bisect, pytest_probe, save

    images = [name.strip() for name in args.images.split(",") if name.strip()]
    if len(images) < 2:
        raise PinetError(
            "--images needs at least two names: the known good image first, the known bad one last"
        )
    if args.repeat < 2:
        raise PinetError("--repeat must be at least 2: one run per image has no noise to judge against")
    db = store_url(os.environ.get("PINET_DB", ""))
    register_secret(urlsplit(db).password)
    results = Path(args.results) / time.strftime("bisect-%Y%m%d-%H%M%S")
    selection = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    said = " ".join(selection) or "(all)"
    print(f"bisect: {len(images)} images, {args.repeat} repetitions each, selection {said}")
    result = bisect(images, pytest_probe(selection, args.repeat, results, db), min_band_percent=args.min_band)
    saved = save(result, results / "bisect.json")
    print(f"bisect: {result.message}")
    print(f"bisect: {len(result.probes)} provisionings; evidence: {saved} and the store's runs above")
    return {"found": 0, "no-difference": 1}.get(result.outcome, 3)


def last_night(results: Path, db: str) -> Any:
    """The morning summary (``record.morning.Morning``) of the newest run under ``results``;
    None when there is no run or no store to read it from."""
    from ..record.morning import morning_of
    from ..record.results_dir import ResultsDir
    from ..record.store import ResultsStore

    if not results.is_dir():
        return None
    runs = sorted(p for p in results.iterdir() if p.is_dir() and (p / "measurements.jsonl").exists())
    if not runs or (db.startswith("sqlite:///") and not Path(db.removeprefix("sqlite:///")).exists()):
        return None
    store = ResultsStore(db)
    try:
        return morning_of(store, runs[-1].name, ResultsDir(results, runs[-1].name).load_facts())
    finally:
        store.close()


def _main_job_report(args: argparse.Namespace, results: Path) -> str:
    from ..record.report import build_report

    try:
        index = build_report(
            Path(".").resolve(),
            results / "allure-results",
            results / "report",
            allure_history_file(),
            morning=last_night(results, store_url(os.environ.get("PINET_DB", ""))),
        )
    except PinetError as exc:
        return f"report not built: {exc}"
    return f"report: {index}  (python3 -m http.server -d {index.parent} 8080 --bind 127.0.0.1)"


def _main_job_summary(results: Path, db: str, code: int, report_line: str) -> None:
    """What passed, what regressed, where the report is."""
    from ..record.store import ResultsStore

    runs = sorted(p for p in results.iterdir() if p.is_dir() and (p / "measurements.jsonl").exists())
    print("\n=== pinet main job summary ===")
    if runs:
        run_id = runs[-1].name
        verdicts: dict[str, int] = {}
        if not db.startswith("sqlite:///") or Path(db.removeprefix("sqlite:///")).exists():
            store = ResultsStore(db)
            try:
                with store._tx() as cur:
                    cur.execute(
                        "SELECT verdict, COUNT(*) FROM measurements WHERE run_id = ? GROUP BY verdict",
                        (run_id,),
                    )
                    verdicts = {str(v or "unjudged"): int(n) for v, n in cur.fetchall()}
            finally:
                store.close()
        print(f"run {run_id}: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
        regressed = sum(n for v, n in verdicts.items() if "regression" in v)
        below = sum(n for v, n in verdicts.items() if "below-threshold" in v)
        undecided = sum(n for v, n in verdicts.items() if "undecided" in v)
        print(
            f"regressions against baseline: {regressed}; below threshold: {below}; "
            f"undecided (interval holds the line): {undecided}"
        )
    print(f"pytest exit status: {code} ({'no failures' if code == 0 else 'failures, see above'})")
    print(report_line)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pinet", description="network regression testing of boards")
    parser.add_argument("--version", action="version", version=f"pytest-pinet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    lab_parser = sub.add_parser("lab", help="the virtual lab (network namespaces)")
    lab_sub = lab_parser.add_subparsers(dest="lab_command", required=True)

    def lab_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--lab", default="pinet", help="lab name: pinet, pinet1, ... (default pinet)")
        p.add_argument(
            "--state-root",
            default=None,
            help="where lab state lives (default $PINET_STATE_DIR or /run/pinet)",
        )

    up = lab_sub.add_parser("up", help="build the lab: hosts, GbE link, sshd, labgrid env file")
    lab_option(up)
    up.add_argument("--replace", action="store_true", help="rebuild even if the lab is up")
    up.add_argument(
        "--places",
        type=int,
        default=0,
        metavar="K",
        help="build K independent labs pinet1..pinetK, one place per xdist worker (ignores --lab)",
    )
    up.add_argument(
        "--board",
        choices=BOARD_KINDS,
        default="netns",
        help="the board: a namespace (default) or a QEMU machine with its own kernel, console and USB",
    )
    up.add_argument(
        "--image",
        choices=[r.name for r in RECIPES],
        default=DEFAULT_IMAGE,
        help="the OS image on the QEMU board's SD card at lab up (--pinet-image reflashes it)",
    )
    up.add_argument(
        "--accel", choices=ACCELERATORS, default="tcg", help="how QEMU runs the board (default tcg)"
    )
    up.add_argument(
        "--no-boot-check",
        dest="boot_check",
        action="store_false",
        help="QEMU board: skip booting and power-cycling it through labgrid once after building",
    )
    up.set_defaults(func=cmd_lab_up)

    export = lab_sub.add_parser(
        "export", help="offer places pinet1..K through a labgrid coordinator (exporter + env files)"
    )
    lab_option(export)
    export.add_argument("--places", type=int, required=True, metavar="K", help="places pinet1..pinetK")
    export.add_argument("--out", required=True, help="directory for exporter.yaml and PLACE.yaml env files")
    export.add_argument("--coordinator", default="", help="HOST:PORT: create the places there, tagged")
    export.add_argument("--exporter-name", default="pinet", help="the exporter's -n name (default pinet)")
    export.set_defaults(func=cmd_lab_export)

    down = lab_sub.add_parser("down", help="remove everything the lab made (idempotent)")
    lab_option(down)
    down.add_argument("--all", action="store_true", help="every pinet lab on this machine")
    down.set_defaults(func=cmd_lab_down)

    status = lab_sub.add_parser("status", help="hosts, addresses, links and shaping")
    lab_option(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_lab_status)

    power = lab_sub.add_parser(
        "power", help="power a host through labgrid: on, off, or cycle and wait for SSH"
    )
    lab_option(power)
    power.add_argument("host")
    power.add_argument("state", choices=["on", "off", "cycle"])
    power.add_argument("--env", default=None, help="labgrid env file (default: the virtual lab's)")
    power.add_argument("--wait", type=float, default=120.0, help="seconds to wait for SSH after a cycle")
    power.set_defaults(func=cmd_lab_power)

    vhost = lab_sub.add_parser("vhost-power", help="(internal) switch a virtual host; used by its env file")
    lab_option(vhost)
    vhost.add_argument("host")
    vhost.add_argument("state", choices=["on", "off"])
    vhost.set_defaults(func=cmd_lab_vhost_power)

    degrade = lab_sub.add_parser(
        "degrade", help="slow the emulated cables by a percentage (a known regression)"
    )
    lab_option(degrade)
    degrade.add_argument("--percent", type=float, default=3.0, help="how much slower (default 3)")
    degrade.add_argument("--reset", action="store_true", help="back to the calibrated rate")
    degrade.set_defaults(func=cmd_lab_degrade)

    check = lab_sub.add_parser("check", help="validate a lab env file without touching hardware")
    check.add_argument("env_file")
    check.set_defaults(func=cmd_lab_check)

    add_history_commands(sub)

    report = sub.add_parser("report", help="build the Allure 3 report with history and goodput trends")
    report.add_argument("--results", default="results", help="results directory (default results)")
    report.add_argument("--root", default=".", help="checkout holding .allure (default .)")
    report.set_defaults(func=cmd_report)

    bench = sub.add_parser(
        "bench",
        help="start-up, fidelity, sensitivity, overhead and adaptive-duration figures (JSON and a table)",
    )
    bench.add_argument("--startups", type=int, default=3)
    bench.add_argument("--fidelity-runs", type=int, default=3, help="runs per direction")
    bench.add_argument(
        "--overhead-repeats", type=int, default=3, help="tests per direction in the overhead batch"
    )
    bench.add_argument("--duration", type=int, default=20, help="seconds per fidelity run")
    bench.add_argument(
        "--adaptive-repeats",
        type=int,
        default=2,
        help="tests per direction in the fixed and adaptive batches (0 = skip that figure)",
    )
    bench.add_argument("--fixed-duration", type=int, default=65, help="seconds of the fixed method (-t)")
    bench.add_argument(
        "--sensitivity-runs",
        type=int,
        default=10,
        help="clean runs, and runs per planted degradation (0.5, 1, 2, 3 %%), judged (0 = skip)",
    )
    bench.add_argument(
        "--sensitivity-history", type=int, default=10, help="clean runs that make the baseline history"
    )
    bench.add_argument("--sensitivity-duration", type=int, default=6, help="seconds per sensitivity run")
    bench.set_defaults(func=cmd_bench)

    run = sub.add_parser("run", help="the main job: the network suite, then the report and a summary")
    run.add_argument(
        "--suite", default=str(SUITE), help="suite directory (default: the suite shipped with pytest-pinet)"
    )
    run.add_argument("--results", default="results", help="results directory (default results)")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="further pytest arguments")
    run.set_defaults(func=cmd_run)

    bis = sub.add_parser(
        "bisect",
        help="find the first image (of an ordered list, good first) whose measurements regress",
        description="Flash each probed image, run the selection --repeat times on it, and halve the "
        "interval between the last good and the first bad image. Exit 0: found; 1: the ends do not "
        "differ beyond noise; 3: a probe measured nothing.",
    )
    bis.add_argument(
        "--images", required=True, help="catalogue images in order, known good first, known bad last"
    )
    bis.add_argument(
        "--repeat", type=int, default=3, help="repetitions of the selection per image (default 3)"
    )
    bis.add_argument(
        "--min-band",
        type=float,
        default=1.0,
        help="smallest change in percent called a regression (default 1)",
    )
    bis.add_argument("--results", default="results", help="results directory (default results)")
    bis.add_argument("pytest_args", nargs=argparse.REMAINDER, help="the selection and lab options, after --")
    bis.set_defaults(func=cmd_bisect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if getattr(args, "command", None) not in ("run", "bisect"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.pytest_args = [*extra, *args.pytest_args]  # `pinet run --pinet-duration 60 ...`
    if getattr(args, "command", None) == "run" and args.pytest_args[:1] == ["--"]:
        args.pytest_args = args.pytest_args[1:]  # `pinet run -- ARGS`: the ARGS are pytest's
    try:
        return int(args.func(args))
    except PinetError as exc:
        print(f"pinet: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pinet: interrupted", file=sys.stderr)
        return 130
