"""Build, inspect, power and tear down a virtual lab.

``down`` never trusts a record of what ``up`` made: a killed ``up`` may not have written it.
It finds everything by the lab's name prefix (namespaces, root-side links, processes inside
the namespaces, the state directory), so it is idempotent and also cleans after a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PinetError
from ..polling import wait_until
from . import (
    envfile,
    jitter,
    machine_settings,
    qemu_board,
    qemu_image,
    rack,
    shaping,
    sshd,
    stale_files,
    system,
    two_boards,
)
from .topology import DiskSpec, LabSpec, LinkSpec, parts

REQUIRED_TOOLS = ("ip", "tc", "ethtool", "sshd", "ssh-keygen", "iperf3")


def run_ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    argv = [system.find_tool("ip")]
    if netns is not None:
        argv += ["-n", netns]
    return system.run([*argv, *args], check=check).stdout


def namespaces(prefix: str) -> list[str]:
    """Existing network namespaces whose name starts with ``prefix``."""
    out = run_ip("netns", "list", check=False)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return sorted(name for name in names if name.startswith(prefix))


def root_links(prefix: str) -> list[str]:
    """Root-namespace interfaces whose name starts with ``prefix``."""
    out = run_ip("-o", "link", "show", check=False)
    found = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@")[0]
            if name.startswith(prefix):
                found.append(name)
    return sorted(found)


def netns_pids(netns: str) -> list[int]:
    """Processes running inside ``netns``."""
    out = run_ip("netns", "pids", netns, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def kill_netns_processes(netns: str, grace: float = 2.0) -> int:
    """SIGTERM then SIGKILL every process in ``netns``; return how many there were."""
    pids = netns_pids(netns)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    wait_until(lambda: not netns_pids(netns), timeout=grace, pace=0.05)  # the rest are killed
    for pid in netns_pids(netns):
        _signal(pid, signal.SIGKILL)
    return len(pids)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


@dataclass
class DownReport:
    """What ``down`` removed, so the CLI can say it and tests can check it."""

    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    processes: int = 0
    state_dir: str | None = None
    disks: list[str] = field(default_factory=list)

    @property
    def nothing(self) -> bool:
        """True when there was nothing left to remove."""
        return not (self.namespaces or self.links or self.processes or self.state_dir or self.disks)


def down(spec: LabSpec) -> DownReport:
    """Remove every namespace, process, link and file of the lab (of a two-board lab: of both
    labs, the QEMU companion first).  Safe to repeat."""
    system.require_root("pinet lab down")
    if spec.is_pair:
        namespace_lab, qemu_lab = parts(spec)
        first, second = down(qemu_lab), down(namespace_lab)
        return DownReport(
            first.namespaces + second.namespaces,
            first.links + second.links,
            first.processes + second.processes,
            second.state_dir or first.state_dir,
            first.disks + second.disks,
        )
    report = DownReport()
    if spec.state_dir.exists():
        jitter.stop(spec.state_dir)  # it runs outside the namespaces, so it is stopped by its pid
        report.processes += rack.stop_exporter(spec.state_dir)  # the same: a root-namespace process
    for netns in namespaces(spec.netns_prefix):
        report.processes += kill_netns_processes(netns)
        run_ip("netns", "delete", netns, check=False)
        report.namespaces.append(netns)
    # After the processes: a filesystem a test mounted lived in a host's mount namespace,
    # which went with them, so the loop devices are free to detach.
    report.disks = detach_disks(spec)
    for link in root_links(f"{spec.name}-"):
        run_ip("link", "delete", link, check=False)
        report.links.append(link)
    qemu_board.remove_serial_dirs(spec)  # after QEMU: what a killed test run's labgrid left
    if spec.state_dir.exists():
        shutil.rmtree(spec.state_dir, ignore_errors=True)
        report.state_dir = str(spec.state_dir)
    machine_settings.release(spec.name)
    stale_files.sweep_irtt_pid_files()  # what hung hosts' irtt servers left in the shared /tmp
    lock = spec.state_root / f"{spec.name}.lock"
    if lock.exists():
        lock.unlink(missing_ok=True)  # a holder keeps its descriptor; nothing else needs the name
    try:
        spec.state_root.rmdir()  # only when empty: other labs' state stays
    except OSError:
        pass
    leftover = (
        namespaces(spec.netns_prefix)
        + root_links(f"{spec.name}-")
        + [d for d, _ in loop_devices(spec.state_dir)]
    )
    if leftover:
        raise PinetError(f"pinet lab down: could not remove {', '.join(leftover)}")
    return report


def loop_devices(under: Path) -> list[tuple[str, str]]:
    """(device, backing file) of every loop device whose file lies under ``under``."""
    out = system.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], check=False).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().removesuffix(" (deleted)").startswith(str(under) + "/"):
            found.append((parts[0], parts[1].strip()))
    return found


def detach_disks(spec: LabSpec) -> list[str]:
    """Detach the lab's loop devices (found by their files' place, not by a record)."""
    detached = []
    for device, _ in loop_devices(spec.state_dir):
        system.run(["losetup", "-d", device], check=False)
        detached.append(device)
    return detached


def _make_disk(spec: LabSpec, disk: DiskSpec) -> str:
    image = spec.disk_image(disk)
    with open(image, "wb") as handle:
        handle.truncate(disk.size_mib * 1024 * 1024)
    return system.run(["losetup", "--find", "--show", str(image)]).stdout.strip()


def is_up(spec: LabSpec) -> bool:
    """True when every host namespace exists and the env file has been written (of a
    two-board lab: both labs are up and their joint env file is written)."""
    if spec.is_pair:
        netns, qemu = parts(spec)
        absent = bool(built_as(spec).get("absent"))
        return is_up(netns) and (absent or is_up(qemu)) and spec.env_file.exists()
    present = set(namespaces(spec.netns_prefix))
    wanted = {spec.netns(h.name) for h in spec.hosts}
    return wanted <= present and spec.env_file.exists()


def built_as(spec: LabSpec) -> dict[str, str]:
    """What the running lab was built with (board kind, SD card image, accelerator), from lab.json
    (a two-board lab's: pair.json, beside its namespace lab's lab.json)."""
    pair = spec.state_dir / "pair.json"
    try:
        data = json.loads(
            (pair if pair.exists() else spec.state_dir / "lab.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return {}
    keys = ("board", "image", "accel", "absent", "twin", "twin_qemu")
    return {key: str(data.get(key) or "") for key in keys}


def check_same_build(spec: LabSpec) -> None:
    """Refuse to hand a run a lab that is up with another board or image than it asked for."""
    have = built_as(spec)
    want = {"board": spec.board, "image": spec.image, "accel": spec.accel}
    have.pop("absent", None)
    have.pop("twin", None)
    if have and have.get("board", "netns") == "":
        have["board"] = "netns"
    differs = {k: (have.get(k, ""), v) for k, v in want.items() if have.get(k, "") != v}
    if have and differs:
        said = ", ".join(
            f"{k} {old or 'none'} (asked for {new or 'none'})" for k, (old, new) in differs.items()
        )
        raise PinetError(
            f"virtual lab {spec.name} is up with {said}: take it down with "
            f"`pinet lab down --lab {spec.name}` or choose another lab with --lab pinetN"
        )


def up(spec: LabSpec, *, replace: bool = False, client_key: Path | None = None) -> Path:
    """Build the lab and return its labgrid env file.

    An already complete lab is kept (idempotent); a partial one (crashed ``up``) is removed
    first.  Any failure part-way removes what was built, so no half lab is left behind.
    ``client_key``: log in with this key rather than a new one (a two-board lab's companion
    is reached with the key of the lab it pairs with).
    """
    system.require_root("pinet lab up")
    system.require_tools(REQUIRED_TOOLS)
    if is_up(spec) and not replace:
        check_same_build(spec)
        return spec.env_file
    if spec.is_pair:
        return _pair_up(spec, replace)
    down(spec)
    _check_address_plan(spec)
    # The board's image first: building it takes minutes and touches nothing of the lab.
    image = qemu_image.ensure_image() if spec.is_qemu else None
    try:
        _build(spec, image, client_key)
    except BaseException:
        down(spec)
        raise
    return spec.env_file


def _pair_up(pair: LabSpec, replace: bool) -> Path:
    """Both labs of a two-board lab, then their joint env file; a failure removes both.

    A machine that cannot run the QEMU board (no QEMU, no room for its images) gets the
    namespace board alone, and the env file says why the other is absent (``pinet.absent``),
    so its tests skip with that reason rather than the run failing or going silent."""
    netns, qemu = parts(pair)
    print(f"pinet: building virtual lab {pair.name}: board pi (a namespace) and board qpi (QEMU)", flush=True)
    if not replace and is_up(netns):
        check_same_build(pair)  # a namespace lab built alone is not taken over as half a pair
    try:
        up(netns, replace=replace)
        why = two_boards.qemu_missing()
        if not why:
            try:
                up(qemu, replace=replace, client_key=netns.state_dir / "id_ed25519")
            except (PinetError, OSError) as exc:  # e.g. no room for the images
                why = f"the QEMU board could not be built here: {exc}"
        if why:
            print(f"pinet: board qpi is not in this lab: {why}", flush=True)
        pair_json = pair.state_dir / "pair.json"
        built = {"board": "both", "image": pair.image, "accel": pair.accel, "absent": why}
        pair_json.write_text(json.dumps(built), "utf-8")
        return two_boards.write_pair_env(pair, why)
    except BaseException:
        down(pair)
        raise


def _check_address_plan(spec: LabSpec) -> None:
    """Refuse to shadow a network this machine already routes."""
    routes = run_ip("-4", "route", "show", check=False)
    planned = [f"10.{204 + n}.{spec.index}." for n, link in enumerate(spec.links) if not link.board_address]
    for prefix in [f"10.203.{spec.index}.", *planned]:
        if prefix in routes:
            raise PinetError(
                f"pinet lab up: {prefix}0/24 is already routed on this machine; "
                f"choose another lab with --lab pinetN"
            )


def _build(spec: LabSpec, image: qemu_image.BoardImage | None = None, client_key: Path | None = None) -> None:
    spec.state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(spec.state_dir, 0o700)
    machine_settings.hold(spec.name)
    (spec.state_dir / "lab.json").write_text(
        json.dumps({"lab": spec.name, "state": "building"}), encoding="utf-8"
    )

    run_ip("link", "add", spec.bridge, "type", "bridge")
    run_ip("addr", "add", f"{spec.mgmt_gateway}/24", "dev", spec.bridge)
    run_ip("link", "set", spec.bridge, "up")

    own_key = spec.state_dir / "id_ed25519"
    if client_key is not None:
        for suffix in ("", ".pub"):
            shutil.copyfile(f"{client_key}{suffix}", f"{own_key}{suffix}")
    sshd.generate_key(own_key, f"pinet-client@{spec.name}")
    authorized = spec.state_dir / "authorized_keys"
    shutil.copyfile(own_key.with_suffix(".pub"), authorized)

    for host in spec.hosts:
        _make_host(spec, host.name)
    for link in spec.links:
        _make_link(spec, link)
    known_hosts = []
    # A namespace host's disks are loop devices; the QEMU board's (one) is its USB disk.
    devices = {d.name: _make_disk(spec, d) for d in spec.disks if not is_qemu_board(spec, d.host)}
    if image is not None:
        qemu_board.plumb(spec, run_ip)
        qemu_board.write_wrapper(spec)
        qemu_board.flash_card(spec, image, spec.image)
        own = [d for d in spec.disks if is_qemu_board(spec, d.host)][:1]
        # Without a disk of its own in the plan (a twin's QEMU board) it still has the drive
        # QEMU's command line names, small and unused.
        qemu_board.make_disk(spec, own[0].size_mib if own else 16)
        devices |= {d.name: qemu_board.USB_DISK_DEVICE for d in own}
        # The image's own host key: every boot of it presents the same one, so it is pinned.
        known_hosts.append(f"{spec.mgmt_address(spec.board_host.name)} {image.host_key}")

    for host in spec.hosts:
        if is_qemu_board(spec, host.name):
            continue
        host_dir = spec.host_dir(host.name)
        address = spec.mgmt_address(host.name)
        sshd.write_config(host_dir, host.name, address, authorized)
        sshd.start(spec.netns(host.name), host_dir, address)
        public = (host_dir / "ssh_host_ed25519_key.pub").read_text(encoding="utf-8").split()
        known_hosts.append(f"{address} {public[0]} {public[1]}")
    (spec.state_dir / "known_hosts").write_text("\n".join(known_hosts) + "\n", encoding="utf-8")
    envfile.write_env_file(spec, devices, image)
    built = {"lab": spec.name, "state": "up", "board": spec.board, "image": spec.image, "accel": spec.accel}
    (spec.state_dir / "lab.json").write_text(json.dumps(built), encoding="utf-8")


def is_qemu_board(spec: LabSpec, host: str) -> bool:
    return spec.is_qemu and host == spec.board_host.name


def _make_host(spec: LabSpec, host: str) -> None:
    netns = spec.netns(host)
    run_ip("netns", "add", netns)
    run_ip("link", "set", "lo", "up", netns=netns)
    # Each host's own default congestion control is cubic, as on the boards' and peers' OSes
    # (this machine's may be BBR). Being the default is also what lets a peer's ordinary
    # login user ask iperf3 for it (-C cubic): Linux refuses other algorithms to non-root.
    system.run(
        [system.find_tool("sysctl"), "-qw", "net.ipv4.tcp_congestion_control=cubic"], netns=netns, check=False
    )
    veth = spec.mgmt_veth(host)
    run_ip("link", "add", veth, "type", "veth", "peer", "name", "mgmt0", "netns", netns)
    run_ip("link", "set", veth, "master", spec.bridge)
    run_ip("link", "set", veth, "up")
    host_dir = spec.host_dir(host)
    host_dir.mkdir(mode=0o700, exist_ok=True)
    if is_qemu_board(spec, host):
        return  # its mgmt0 is a bridge port; the address is the QEMU machine's
    run_ip("addr", "add", f"{spec.mgmt_address(host)}/24", "dev", "mgmt0", netns=netns)
    run_ip("link", "set", "mgmt0", "up", netns=netns)
    sshd.generate_key(host_dir / "ssh_host_ed25519_key", f"{host}@{spec.name}")


def _make_link(spec: LabSpec, link: LinkSpec) -> None:
    """A veth pair from the board to the peer, shaped, addressed and with carrier.

    A QEMU board shapes and addresses its own port inside the machine: the cable's end in
    its namespace is only a port of the bridge that joins it to the board's tap.
    """
    board_ns, peer_ns = spec.netns(link.board), spec.netns(link.peer)
    qemu = is_qemu_board(spec, link.board)
    board_end = qemu_board.cable_end(link.board_interface) if qemu else link.board_interface
    run_ip(
        "link",
        "add",
        board_end,
        "netns",
        board_ns,
        "type",
        "veth",
        "peer",
        "name",
        link.peer_interface,
        "netns",
        peer_ns,
    )
    ends = [(peer_ns, link.peer_interface, "peer")]
    if qemu:
        run_ip("link", "set", board_end, "mtu", str(link.mtu), netns=board_ns)
        run_ip("link", "set", board_end, "up", netns=board_ns)
    else:
        ends.insert(0, (board_ns, board_end, "board"))
    for netns, device, side in ends:
        if not spec.links_provisioned:
            run_ip("link", "set", device, "mtu", str(link.mtu), netns=netns)
        shaping.disable_offloads(netns, device)
        shaping.shape_end(netns, device, link.speed_mbps, link.mtu, link.port_mbps if side == "board" else 0)
        shaping.label(netns, device, link.speed_mbps)
        if not spec.links_provisioned:
            run_ip("addr", "add", f"{spec.link_address(link, side)}/24", "dev", device, netns=netns)
        run_ip("link", "set", device, "up", netns=netns)
    for netns, device, _ in ends:
        _wait_operstate_up(netns, device)


def _wait_operstate_up(netns: str, device: str, timeout: float = 5.0) -> None:
    """A cable is ready when both ends report carrier, not when the command returned."""
    wait_until(
        lambda: "state UP" in run_ip("link", "show", "dev", device, netns=netns, check=False),
        timeout=timeout,
        pace=0.02,
        on_timeout=lambda: PinetError(f"pinet lab up: {netns}:{device} has no carrier after {timeout:.0f} s"),
    )


def power(spec: LabSpec, host: str, state: str) -> None:
    """Switch a virtual host off (every process killed, links down) or on (links up, sshd).

    This is what the labgrid ExternalPowerDriver of the env file calls, so a power-cycle in
    a test really takes the host away and brings it back.
    """
    system.require_root("pinet lab power")
    spec.host(host)  # KeyError for an unknown host, turned into a message by the CLI
    if is_qemu_board(spec, host):
        raise PinetError(
            f"{host} is a QEMU board: labgrid's QEMUDriver in the test run powers it "
            f"(`pinet lab power {host} cycle` boots and checks it)"
        )
    netns = spec.netns(host)
    if netns not in namespaces(spec.netns_prefix):
        raise PinetError(f"virtual lab {spec.name} is not up: run `pinet lab up` first")
    devices = [name for name in netns_links(netns) if name != "lo"]
    if state == "off":
        kill_netns_processes(netns)
        for device in devices:
            run_ip("link", "set", device, "down", netns=netns)
    elif state == "on":
        for device in devices:
            run_ip("link", "set", device, "up", netns=netns)
        if sshd.read_pid(spec.host_dir(host)) == 0 or not netns_pids(netns):
            sshd.start(netns, spec.host_dir(host), spec.mgmt_address(host))
    else:
        raise PinetError(f"power state must be 'on' or 'off', got {state!r}")


def netns_links(netns: str) -> list[str]:
    out = run_ip("-o", "link", "show", netns=netns, check=False)
    return [line.split(":", 2)[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
