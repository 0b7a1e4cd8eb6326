"""The hardware night, rehearsed as written: docs/hardware-lab.md and docs/nightly.md run
block by block against a twin of lab/rpi-lab.yaml, then the GitLab job's lines.

The twin (pytest_pinet/virtlab/twin.py) is the drawing of the example built on this machine:
boards pi4 and pi5, peers pc-lan and pc-inet with their sshd, the cables between the
interfaces the file names, the PoE switch and the PDU at the file's addresses, the console
server with a line per board.  Everything else is the pages' own steps, with the map of
docs/rehearsal.md: the lab's repository is made by the page's commands (the repository
cloned, its wheel built, the recipe's ``setup`` installing it into a fresh venv), the key
made and installed by the page's lines, the host keys scanned by its ``ssh-keyscan``, the
peers' sudoers line, firewall and link addresses from its blocks, the coordinator and
exporter started and the places made by its commands, and the nights run by its lines and
the GitLab job's.  A block that drifts from the code fails here with the page and line.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.exit_codes import Exit
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import twin, twin_console, twin_networkd, virtual_lab
from tests.fixture_paths import EXAMPLE_ENV, RECIPES

from .doc_runner import Block, DocRunner

pytestmark = [pytest.mark.slow, pytest.mark.qemu]  # the twin's pi5 is the QEMU board

REPO = Path(__file__).resolve().parents[2]
PAGES = (REPO / "docs" / "hardware-lab.md", REPO / "docs" / "nightly.md")
PINET = [sys.executable, "-m", "pytest_pinet.cli"]
LAB = "pinet45"
SUDOERS = Path("/etc/sudoers.d/pinet-rehearsal")
# What the rehearsal's nights measure: the suite's half-duplex goodput in its stock profile,
# both directions on each board (4 tests), in 2 s runs after 1 s of warm-up (docs/rehearsal.md:
# its one addition).
# A band of at least 2 %: the twin's veths on a shared CI machine wander by half a percent,
# the shipped floor of the band; the degraded night is 5 % slower.  A suspect result is
# confirmed as on any lab (--pinet-remeasure's default): CI measured one 2 s route through
# pi4 at 893 Mbit/s against its 930 floor, a busy moment, not the page's lab.
SETTINGS = "--pinet-duration 2 --pinet-omit 1 --pinet-baseline-band 2"
SELECTION = f"-k 'test_tcp_half_duplex_goodput and stock' {SETTINGS}"
# The GitHub workflow's night, the one after: the same tests, so that whichever direction the
# first degraded night found regressed is measured again and seen to persist (a direction
# whose few noisy nights gave it a wide band holds a 5 % drop inside it: CI once measured only
# board->peer, 894 against 932 +- 212 Mbit/s, while peer->board had regressed).
NEXT_NIGHT = SELECTION
# The first whole run by hand also routes through pi4 and sends UDP from it: the
# peers' ports behind the page's firewall (iperf3's, irtt's, the discard port) and their
# sudo (host routes) are what those need.
FIRST_RUN = (
    "-k '(test_tcp_half_duplex_goodput and stock) or test_download_through_the_board "
    f"or (test_udp_rate_over_the_link and sendmmsg and pi4)' {SETTINGS}"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)


def command_map(lab: twin.Twin, port: int) -> dict[str, str]:
    """docs/rehearsal.md's map: the twin's (addresses, disk, TFTP root, user ``lab``), then
    the controller's name and port, the repository, and the lab's own files."""
    table = twin.substitutions(lab)
    table.update(
        {
            "lab@": f"{twin.TWIN_USER}@",
            "lab ALL=": f"{twin.TWIN_USER} ALL=",
            "lab-ctl:20408": f"127.0.0.1:{port}",
            "0.0.0.0:20408": f"127.0.0.1:{port}",
            "<the pytest-pinet repository>": str(REPO),
            "/srv/wheels": "wheels",
            "known_hosts: known_hosts.example": "known_hosts: known_hosts",
            "known_hosts: ../../known_hosts.example": "known_hosts: ../../known_hosts",
            "identity: id_ed25519.example": "identity: ~/.ssh/pinet-lab",
            "identity: ../../id_ed25519.example": "identity: ~/.ssh/pinet-lab",
        }
    )
    return table


@pytest.fixture
def rehearsal(root_required, tmp_path) -> Iterator[tuple[twin.Twin, Path, dict[str, str]]]:
    """The twin up, its user made, the controller's home and the lab's empty repository."""
    for tool in ("sudo", "nft", "visudo", "ser2net", "snmpd", "node", "npm", "git"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: scripts/setup.sh --tests installs it")
    state = tmp_path / "state"
    spec = twin.plan(EXAMPLE_ENV, LAB, state)
    virtual_lab.down(spec)
    _run(["userdel", "-r", twin.TWIN_USER])
    home, repo = tmp_path / "home", tmp_path / "lab-repo"
    home.mkdir()
    repo.mkdir()
    try:
        # The twin as a lab engineer builds one of their own file (docs/rehearsal.md).
        built = _run(
            [*PINET, "lab", "up", "--lab", LAB, "--state-root", str(state), "--twin", str(EXAMPLE_ENV)]
        )
        assert built.returncode == 0, built.stdout + built.stderr
        assert "192.168.10.  ->  10.203.45." in built.stdout, built.stdout
        lab = twin.of(LAB, state)
        assert lab is not None
        assert _run(["useradd", "-m", "--shell", "/bin/sh", twin.TWIN_USER]).returncode == 0
        assert _run(["usermod", "-p", "*", twin.TWIN_USER]).returncode == 0  # no password, not locked
        path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if str(REPO) not in p)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "SSH_AUTH", "LG_", "PINET_", "PYTEST_"))
        }
        # The runner's own caches, as a CI runner keeps them from night to night; its home is
        # the rehearsal's (its ~/.ssh is the page's).
        real_home = Path(os.environ.get("HOME", "/root"))
        env.update(
            PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(real_home / ".cache" / "pip")),
            NPM_CONFIG_CACHE=os.environ.get("NPM_CONFIG_CACHE", str(real_home / ".npm")),
            HOME=str(home),
            PATH=path,
            PINET_DB=f"sqlite:///{repo}/store.sqlite",
            PINET_STATE_DIR=str(state),
            PYTEST_ADDOPTS=SELECTION,
        )
        yield lab, repo, env
    finally:
        SUDOERS.unlink(missing_ok=True)
        down = _run([*PINET, "lab", "down", "--lab", LAB, "--state-root", str(state)])
        assert down.returncode == 0 and not virtual_lab.namespaces(f"{LAB}-"), down.stdout + down.stderr
        _run(["userdel", "-r", twin.TWIN_USER])


def _edit(repo: Path, table: dict[str, str], *names: str) -> None:
    """What a lab engineer changes by hand in a copied example: the map, nothing else."""
    for name in names:
        for path in [repo / name] if (repo / name).is_file() else sorted((repo / name).rglob("*.yaml")):
            path.write_text(twin.substitute(path.read_text(encoding="utf-8"), table), encoding="utf-8")


# Step 5's own file of a lab, for the twin's cables: veths on a shared CI machine carry GbE's
# 941 Mbit/s when the machine is idle and a few Mbit/s less when it is not, under the shipped
# Pi 4B floor of 940, and its route through pi4 less again (docs/rehearsal.md).
TWIN_THRESHOLDS = """extends: shipped
rules:
  - id: twin-veth-cables
    match: {scenario: ethernet}
    min_mbps: 900
    why: the rehearsal's twin, veths on a shared CI machine (docs/rehearsal.md)
  - id: twin-veth-routes
    match: {scenario: "routing*"}
    min_mbps: 900
    why: >-
      the twin's route through pi4 crosses two veths of the same shared machine: a CI trial
      measured 913.9, 936.7 and 918.0 Mbit/s where the idle machine carries 941
  - id: twin-qemu-pi5
    match: {board: pi5, scenario: ethernet}
    min_mbps: 100
    why: >-
      the twin's pi5 is a QEMU board (docs/rehearsal.md): its emulated CPUs, not the cable,
      set its rate (the shipped rule qpi-ethernet-half-duplex holds the default lab's to 100)
latency_rules:
  - id: twin-qemu-pi5-latency
    match: {board: pi5, scenario: ethernet, duplex: half, link_speed_mbps: 1000}
    max_p99_ms: 350
    why: >-
      the twin's pi5 is a QEMU board: its four vCPUs are threads of a two-core host, and its
      rings drain at its emulated rate (the shipped latency-link-gbe-half-qpi; a CI trial
      measured p99 164 ms)
"""


def _own_thresholds(repo: Path) -> None:
    (repo / "lab" / "thresholds.yaml").write_text(TWIN_THRESHOLDS, encoding="utf-8")


def _peers(lab: twin.Twin) -> list[str]:
    return [h.name for h in lab.spec.hosts if h.role == "peer"]


def _install_nft(lab: twin.Twin) -> Any:
    def install(block: Block, text: str) -> None:
        for peer in _peers(lab):
            netns = lab.spec.netns(peer)
            _run(["ip", "netns", "exec", netns, "nft", "flush", "ruleset"])
            loaded = _run(["ip", "netns", "exec", netns, "nft", "-f", "-"], input=text)
            assert loaded.returncode == 0, f"{block.name}: {loaded.stderr}"

    return install


def _install_sudoers(tmp: Path) -> Any:
    def install(block: Block, text: str) -> None:
        candidate = tmp / "sudoers"
        candidate.write_text(text, encoding="utf-8")
        checked = _run(["visudo", "-cf", str(candidate)])
        assert checked.returncode == 0, f"{block.name}: {checked.stdout}{checked.stderr}"
        shutil.copy(candidate, SUDOERS)
        SUDOERS.chmod(0o440)

    return install


def _install_networkd(lab: twin.Twin) -> Any:
    """The page's .network file, written for every end of every cable as the page says (one
    file per interface) and applied as systemd-networkd does at boot: on the QEMU board at
    its console, in its own /etc/systemd/network."""

    def install(block: Block, text: str) -> None:
        assert "Name=enp3s0" in text and "Address=10.10.1.100/24" in text, block.name
        files: dict[str, dict[str, str]] = {host.name: {} for host in lab.spec.hosts}
        for link in lab.spec.links:
            for host, device, side in (
                (link.board, link.board_interface, "board"),
                (link.peer, link.peer_interface, "peer"),
            ):
                address = lab.spec.link_address(link, side)
                files[host][f"10-pinet-{device}.network"] = (
                    text.replace("enp3s0", device)
                    .replace("MTUBytes=1500", f"MTUBytes={link.mtu}")
                    .replace("10.10.1.100/24", f"{address}/24")
                )
        for host, written in files.items():
            twin_networkd.install_networkd(lab, host, written)

    return install


def _on_each_host(lab: twin.Twin, home: Path, repo: Path) -> Any:
    """A block run on every host as its login user, in that user's home, with the lab's
    public key copied there (the namespace hosts share this machine's files; the QEMU board
    is logged in at its console, where the key is typed into root's home)."""

    def run(block: Block, text: str) -> None:
        data = yaml.safe_load((repo / "lab" / "rpi-lab.yaml").read_text(encoding="utf-8"))
        public = (home / ".ssh" / "pinet-lab.pub").read_text(encoding="utf-8")
        for host in lab.spec.hosts:
            user = data["targets"][host.name]["resources"]["NetworkService"]["username"]
            if host.name == twin.qemu_host(lab.spec):
                assert user == "root", host.name
                line = twin.console_line(lab, host.name)
                with twin_console.console_shell(host.name, line.address, line.port, line.protocol) as shell:
                    twin_console.write_file(shell, host.name, "/root/pinet-lab.pub", public)
                    twin_console.run(shell, host.name, text)
                continue
            user_home = lab.root_home if user == "root" else Path(pwd.getpwnam(user).pw_dir)
            shutil.copy(home / ".ssh" / "pinet-lab.pub", user_home / "pinet-lab.pub")
            shutil.chown(user_home / "pinet-lab.pub", user)
            argv = ["runuser", "-u", user, "--", "env", f"HOME={user_home}", "sh", "-e", "-c", text]
            done = _run(argv, cwd=user_home)
            assert done.returncode == 0, f"{block.name} on {host.name}: {done.stderr}"

    return run


def test_the_pages_and_the_recipe_run_as_written_on_a_twin_of_the_example_lab(rehearsal, tmp_path):
    lab, repo, env = rehearsal
    table = command_map(lab, _free_port())
    for_the_runner: list[str] = []  # what the page tells the lab to do once CI holds the key
    runner = DocRunner(
        cwd=repo,
        env=env,
        substitute=lambda text: twin.substitute(text, table),
        on_host=_on_each_host(lab, Path(env["HOME"]), repo),
        installs={
            "nft": _install_nft(lab),
            "sudoers": _install_sudoers(tmp_path),
            "ini": _install_networkd(lab),
            "sh ci-runner": lambda block, text: for_the_runner.append(text),
        },
        env_for={"pinet run -- --lg-env lab/rpi-lab.yaml": {"PYTEST_ADDOPTS": FIRST_RUN}},
    )
    try:
        runner.run_page(
            PAGES[0],
            after={
                "cp pytest-pinet/lab/known_hosts.example lab/": lambda: _edit(
                    repo, table, "lab/rpi-lab.yaml"
                ),
                "cp -r pytest-pinet/lab/coordinated lab/": lambda: _edit(repo, table, "lab/coordinated"),
                "pinet thresholds explain --context": lambda: _own_thresholds(repo),
            },
        )
        # The night after a cable went bad: the GitLab job's lines, as its YAML has them,
        # through the places, with the variables a lab of places sets.
        degraded = _run(
            [str(repo / ".venv" / "bin" / "pinet"), "lab", "degrade", "--lab", LAB, "--percent", "5"], env=env
        )
        assert degraded.returncode == 0, degraded.stdout + degraded.stderr
        with _agent_only(repo, Path(env["HOME"]), for_the_runner) as secret:
            night = _gitlab_night(repo, {**env, **table_env(table)}, secret)
            _github_night(repo, {**env, **table_env(table)}, secret)
        run = _regressed_run(repo, env)
        table["pinet accept RUN "] = f"pinet accept {run} "
        runner.run_page(PAGES[1])
    finally:
        runner.stop_background()
    wait_until(lambda: not _left_running(repo), timeout=20, pace=0.5)
    assert not _left_running(repo), _left_running(repo)  # the page's services ended with the rehearsal
    print("\n".join(["ran:", *runner.ran, "skipped:", *runner.skipped]))
    assert [b for b in runner.skipped if "ssh-copy-id" not in b] == [], runner.skipped
    assert "regression" in night, night[-3000:]
    runs = _runs(repo)
    _assert_first_run_through_the_peers(runs[1])
    _assert_every_place_taken_and_given_back(runs[2], table["lab-ctl:20408"], repo, env)
    _assert_the_store(repo, run)
    _assert_the_firewall_needs_its_iperf3_line(lab, PAGES[0])
    _assert_power_over_snmp_and_both_console_lines(lab, repo)


def _runs(repo: Path) -> list[list[dict[str, Any]]]:
    """Each run's results, oldest first: (measurements, facts) rows, kind-tagged."""
    found = []
    for run_dir in sorted((repo / "results").glob("2*")):
        rows = []
        for name in ("measurements", "facts"):
            path = run_dir / f"{name}.jsonl"
            if path.exists():
                rows += [{"file": name, **json.loads(line)} for line in path.read_text().splitlines()]
        found.append(rows)
    return found


def _assert_first_run_through_the_peers(rows: list[dict[str, Any]]) -> None:
    """The whole run by hand measured both boards, routed through pi4 with irtt's latency,
    and sent UDP: through the page's firewall, as the page's ordinary user with its sudo."""
    measured = [r for r in rows if r["file"] == "measurements"]
    boards = {r["context"]["board"] for r in measured}
    assert boards == {"pi4", "pi5"}, boards
    assert all(r["goodput_mbps"] > 0 for r in measured), [(r["test_id"], r["goodput_mbps"]) for r in measured]
    # pi5 is the QEMU board: its own kernel, booted from its card, its own port's driver.
    kernels = {r["context"]["board"]: (r["context"]["kernel"], r["context"]["driver"]) for r in measured}
    assert kernels["pi4"][0] == os.uname().release and kernels["pi5"][0] != os.uname().release, kernels
    assert kernels["pi5"][1] == "virtio_net", kernels
    routed = [r for r in measured if "test_download_through_the_board" in r["test_id"]]
    latency = [r["detail"]["latency"] for r in routed]
    assert latency and all(p["tool"] == "irtt" and p["load_rtt_ms"] for p in latency), latency
    assert any("test_udp_rate_over_the_link" in r["test_id"] for r in measured)


def _assert_every_place_taken_and_given_back(
    rows: list[dict[str, Any]], coordinator: str, repo: Path, env: dict[str, str]
) -> None:
    """The night through the places: each worker reserved and acquired a place of its own,
    measured its board and released it; the coordinator holds none afterwards."""
    facts = [r for r in rows if r["file"] == "facts" and r["kind"] == "place"]
    taken = [f for f in facts if f["event"] == "taken"]
    assert sorted(f["worker"] for f in taken) == ["gw0", "gw1"], taken
    assert sorted(f["place"] for f in taken) == ["pi4-1", "pi5-1"], taken
    assert all(f["source"] == "coordinator" and f["token"] for f in taken)
    assert len([f for f in facts if f["event"] == "released"]) == 2, facts
    boards = {r["context"]["board"] for r in rows if r["file"] == "measurements"}
    assert boards == {"pi4", "pi5"}, boards  # each place's board measured whole
    client = [str(repo / ".venv" / "bin" / "labgrid-client"), "-x", coordinator]
    held = _run([*client, "who"], env=env).stdout + _run([*client, "reservations"], env=env).stdout
    assert "pi4-1" not in held and "pi5-1" not in held, held


def _assert_power_over_snmp_and_both_console_lines(lab: twin.Twin, repo: Path) -> None:
    """The page's power cycles went through the PoE switch's SNMP agent (labgrid's poe_mib,
    pysnmp, snmpd and its pass-through): pi4's port 3 and the QEMU board's port 5 each set off,
    then on.  Each cycle read its console server line: pi4's RFC 2217 line is silent (a
    namespace has no UART to speak), pi5's raw line carried its boot (the page's key step
    logged in as root over that raw line before, typed at its console)."""
    (agent_log,) = sorted(lab.folder.glob("power-*.snmp.log"))
    sets = re.findall(r"snmp port (\d+) set: (on|off)", agent_log.read_text(encoding="utf-8"))
    for port in ("3", "5"):
        mine = [state for number, state in sets if number == port]
        assert "off" in mine and "on" in mine[mine.index("off") :], (port, sets)
    said = (repo / "doc-runner.log").read_text(encoding="utf-8")
    assert re.search(r"pi4: console rfc2217 10\.203\.\d+\.5:4001: silent", said), said[-3000:]
    assert re.search(r"pi5: console raw 10\.203\.\d+\.5:4002: [1-9]\d* lines since power on", said), said[
        -3000:
    ]


def _assert_the_firewall_needs_its_iperf3_line(lab: twin.Twin, page: Path) -> None:
    """The page's ruleset without its iperf3 line: an iperf3 client on the board cannot reach
    a server on the peer (the lab fault pinet then reports names the ports: a unit test)."""
    text = page.read_text(encoding="utf-8")
    (ruleset,) = re.findall(r"^```nft\n(.*?)^```$", text, re.S | re.M)
    without = "\n".join(line for line in ruleset.splitlines() if "20000-29999" not in line) + "\n"
    link = lab.spec.links[0]
    peer = lab.spec.netns(link.peer)
    assert _run(["ip", "netns", "exec", peer, "nft", "flush", "ruleset"]).returncode == 0
    assert _run(["ip", "netns", "exec", peer, "nft", "-f", "-"], input=without).returncode == 0
    server = subprocess.Popen(
        ["ip", "netns", "exec", peer, "iperf3", "-s", "-1", "-p", "24242"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = _run(
            ["ip", "netns", "exec", lab.spec.netns(link.board), "iperf3", "-c", link.peer_address,
             "-p", "24242", "-t", "1", "--connect-timeout", "2000"]
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()
    assert client.returncode != 0 and "unable to connect" in client.stdout + client.stderr, client


def _left_running(repo: Path) -> list[str]:
    """Processes still running from the lab's repository (its venv's coordinator, exporter)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().split(") ", 1)[1][0]
        except OSError:
            continue
        if str(repo) in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def table_env(table: dict[str, str]) -> dict[str, str]:
    """The job's variables of a lab whose boards are places (docs/nightly.md's table)."""
    return {
        "PINET_ENV": "lab/coordinated/places",
        "PINET_COORDINATOR": table["lab-ctl:20408"],
        "PINET_PLACE_TAGS": "pinet=nightly",
    }


@contextlib.contextmanager
def _agent_only(repo: Path, home: Path, for_the_runner: list[str]) -> Iterator[Path]:
    """The CI nights as the page leaves them: the env files without their ``identity:`` line
    (the page's ``ci-runner`` block, run as written) and the lab's key only in the CI's secret
    store, not in ``~/.ssh``: a night reaches the hosts through its own ssh-agent or not at
    all.  The key is back in ``~/.ssh`` afterwards."""
    assert len(for_the_runner) == 1, for_the_runner
    done = _run(["sh", "-e", "-c", for_the_runner[0]], cwd=repo)
    assert done.returncode == 0, done.stderr
    env_files = [repo / "lab" / "rpi-lab.yaml", *(repo / "lab" / "coordinated" / "places").glob("*.yaml")]
    assert len(env_files) == 3 and not [f for f in env_files if "identity:" in f.read_text(encoding="utf-8")]
    key = home / ".ssh" / "pinet-lab"
    secret = home / "ci-secret-store" / "pinet-lab"
    secret.parent.mkdir(mode=0o700)
    key.rename(secret)
    try:
        yield secret
    finally:
        secret.rename(key)


# A night on the degraded cable is red for the boards' owner: a regression (9), and often
# below the twin's own 900 Mbit/s floor as well (a 5 % slower cable carries 894); when the
# store's band, widened by a noisy history, holds the drop, below threshold (10) alone.
BOARDS_RED = {int(Exit.REGRESSION), int(Exit.BELOW_THRESHOLD)}


def _gitlab_night(repo: Path, env: dict[str, str], secret: Path) -> str:
    """The nightly-network job's script and after_script lines, run as its YAML has them, with
    the lab's key as a CI File variable (a copy others may read): the night is red for the
    boards' owner (:data:`BOARDS_RED`), its key was in an agent of its own that ended with it, and its report is
    published all the same; then the pages job's lines."""
    recipe = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    job = recipe["nightly-network"]
    key = repo / "ci-file-variable-PINET_SSH_KEY"
    shutil.copy(secret, key)
    key.chmod(0o644)
    env = {**env, "PINET_SSH_KEY": str(key)}
    said = []
    lines = [
        *((line, BOARDS_RED) for line in job["script"]),
        *((line, {0}) for line in job["after_script"]),
    ]
    for line, expected in [*lines, *((line, {0}) for line in recipe["pages"]["script"])]:
        done = subprocess.run(
            ["/bin/sh", "-c", line], cwd=repo, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode in expected, (
            f"{line}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
        )
        said.append(done.stdout)
    agent = re.search(r"pinet-ci: the lab's key is in this night's ssh-agent \(pid (\d+), SHA256:", said[0])
    assert agent is not None, said[0][:2000]
    status = Path(f"/proc/{agent.group(1)}/status")
    assert not status.exists() or "State:\tZ" in status.read_text()  # the agent ended with the night
    assert "report published in public/" in said[1]
    assert (repo / "results" / "junit.xml").exists()  # the job's junit report
    assert job["artifacts"]["when"] == "always" and "public/" in job["artifacts"]["paths"]
    pages = recipe["pages"]
    assert pages["needs"] == [{"job": "nightly-network", "artifacts": True}]
    assert pages["artifacts"]["paths"] == ["public/"] and pages["rules"][0]["when"] == "always"
    assert "googletagmanager" not in (repo / "public" / "index.html").read_text(
        encoding="utf-8"
    )  # calls nobody
    return "\n".join(said)


def _github_night(repo: Path, env: dict[str, str], secret_file: Path) -> None:
    """The GitHub workflow's steps on the next night, as its YAML has them, on a self-hosted
    runner: the lab's key as a secret (text in the step's environment, no file), the night
    red again (the cable is still slow: a regression persisting), the report published."""
    workflow = yaml.safe_load((RECIPES / "github-nightly.yml").read_text(encoding="utf-8"))
    job = workflow["jobs"]["nightly-network"]
    assert "self-hosted" in job["runs-on"] and job["env"]["PINET_DB"] == "${{ secrets.PINET_DB }}"
    steps = {step["name"]: step for step in job["steps"] if "name" in step}
    gitlab = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    assert [steps["setup"]["run"]] == gitlab["nightly-network"]["before_script"]  # the page's setup
    assert steps["nightly"]["env"] == {"PINET_SSH_KEY_TEXT": "${{ secrets.PINET_SSH_KEY }}"}
    runner_temp = repo / "runner-temp"
    runner_temp.mkdir()
    secret = secret_file.read_text(encoding="utf-8")
    env = {**env, "PINET_SSH_KEY_TEXT": secret, "RUNNER_TEMP": str(runner_temp), "PYTEST_ADDOPTS": NEXT_NIGHT}
    said = []
    for name, expected in (("nightly", BOARDS_RED), ("publish", {0})):
        assert steps[name].get("if", "always()") == "always()" or name == "nightly"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", steps[name]["run"]],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode in expected, (
            f"{name}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
        )
        said.append(done.stdout)
    assert "pinet-ci: the lab's key is in this night's ssh-agent (pid " in said[0], said[0][:2000]
    assert "persisting" in said[0] and "report published in public/" in said[1], said
    assert not (runner_temp / "pinet-lab-key").exists()  # the step's trap removed the key's file
    # Least privilege: the workflow reads; only the pages job publishes; one night at a time.
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["pages"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert workflow["concurrency"] == {"group": "pinet-nightly", "cancel-in-progress": False}
    assert (
        steps["pages artifact"]["with"]["path"] == "public/"
        and workflow["jobs"]["pages"]["needs"] == "nightly-network"
    )


def _regressed_run(repo: Path, env: dict[str, str]) -> str:
    """The run the degraded cable's regressions started in, as `pinet regressions --json`
    gives it: pi4's goodput, both directions (its veths carry the cable's rate; pi5, the QEMU
    board, sends and receives at its emulated CPUs' rate, under the slower cable's)."""
    done = _run([str(repo / ".venv" / "bin" / "pinet"), "regressions", "--json"], env=env)
    assert done.returncode in (0, Exit.REGRESSION), done.stdout + done.stderr
    found = json.loads(done.stdout)["regressions"]
    cable = [e for e in found if "board=pi4" in e["context"] and e["metric"] == "goodput"]
    assert len(cable) == 2, found
    runs = {str(entry["since_run"]) for entry in cable}
    assert len(runs) == 1, found
    return runs.pop()


def _assert_the_store(repo: Path, run: str) -> None:
    from pytest_pinet.record.store import ResultsStore

    store = ResultsStore(f"sqlite:///{repo}/store.sqlite")
    try:
        assert len(store.allure_history("rpi-bench-1")) >= 2  # the published report drew on the nights before
        accepted = [a for a in store.acceptances() if a.run_id == run]
        assert accepted, "the page's accept left no acceptance"
    finally:
        store.close()
    assert (repo / "public" / "index.html").exists()
