"""SSH the way labgrid users already have it: keys in an ssh-agent, an ssh_config with a Host
alias, IdentityFile and a ProxyJump through another host's sshd, with no ``identity`` in the
env, and every host key still pinned by the lab's known_hosts.

One namespace lab serves the module.  The jump host is the peer ``pc``: a second sshd in its
namespace, on port 2222 and with TCP forwarding (the lab's own sshd refuses forwarding), so the
board sees the connection come from the peer's address, never from this machine's bridge.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.errors import LabFault
from pytest_pinet.lab.inventory import load_inventory
from pytest_pinet.polling import wait_until
from pytest_pinet.virtlab import sshd, system, virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

JUMP_PORT = 2222


@pytest.fixture(scope="module")
def namespace_lab(root_required, tmp_path_factory) -> Iterator[tuple[LabSpec, dict[str, Any]]]:
    spec = LabSpec(name="pinet91", state_root=tmp_path_factory.mktemp("ssh-lab") / "state")
    virtual_lab.down(spec)
    try:
        env = yaml.safe_load(virtual_lab.up(spec).read_text(encoding="utf-8"))
        yield spec, env
    finally:
        virtual_lab.down(spec)


@pytest.fixture(scope="module")
def jump_sshd(namespace_lab) -> Iterator[str]:
    """A second sshd in pc's namespace that forwards TCP (a lab gateway); its address."""
    spec, _ = namespace_lab
    host_dir = spec.host_dir("pc")
    address = spec.mgmt_address("pc")
    config = host_dir / "sshd_config"
    jump_config = host_dir / "sshd_jump_config"
    text = config.read_text(encoding="utf-8")
    text = text.replace("Port 22\n", f"Port {JUMP_PORT}\n").replace(
        "AllowTcpForwarding no", "AllowTcpForwarding yes"
    )
    text = text.replace(str(host_dir / "sshd.pid"), str(host_dir / "sshd_jump.pid"))
    jump_config.write_text(text, encoding="utf-8")
    sshd_path = system.find_tool("sshd")
    system.run(
        [sshd_path, "-f", str(jump_config), "-E", str(host_dir / "sshd_jump.log")], netns=spec.netns("pc")
    )
    sshd.wait_for_port(address, JUMP_PORT, 10)
    try:
        yield address
    finally:
        pid = int((host_dir / "sshd_jump.pid").read_text(encoding="utf-8"))
        os.kill(pid, signal.SIGTERM)


@pytest.fixture
def no_user_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty home (no ~/.ssh) and no agent, so only what a test gives can authenticate."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


def _env_without_identity(env: dict[str, Any], tmp_path: Path, **ssh: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(yaml.safe_dump(env))
    assert data["pinet"]["ssh"].pop("identity")
    data["pinet"]["ssh"].update(ssh)
    return data


def _board(data: dict[str, Any], tmp_path: Path, name: str = "env.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    inventory = load_inventory(path)
    return inventory.boards[0].connect(connect_timeout=5)


def test_a_lab_host_is_reached_with_a_key_in_the_ssh_agent(
    namespace_lab, no_user_keys, tmp_path, monkeypatch
):
    spec, env = namespace_lab
    data = _env_without_identity(env, tmp_path, config="none")
    # Without the agent nothing authenticates: the key the agent holds is what lets pinet in.
    with pytest.raises(LabFault) as refused:
        _board(data, tmp_path).run(["true"])
    assert refused.value.category == "ssh"
    socket = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL)
    try:
        assert wait_until(socket.exists, timeout=10, pace=0.05), "ssh-agent made no socket"
        added = subprocess.run(
            ["ssh-add", str(spec.state_dir / "id_ed25519")],
            env={**os.environ, "SSH_AUTH_SOCK": str(socket)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert added.returncode == 0, added.stderr
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket))
        board = _board(data, tmp_path)
        try:
            assert board.check(["id", "-un"]).strip() == "root"
        finally:
            board.close()
    finally:
        agent.terminate()
        agent.wait(10)


def _ssh_config(spec: LabSpec, tmp_path: Path, jump_address: str) -> Path:
    key = spec.state_dir / "id_ed25519"
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host lab-board\n"
        f"    HostName {spec.mgmt_address('pi')}\n"
        f"    IdentityFile {key}\n"
        f"    IdentitiesOnly yes\n"
        f"    ProxyJump lab-gw\n"
        f"Host lab-gw\n"
        f"    HostName {jump_address}\n"
        f"    Port {JUMP_PORT}\n"
        f"    User root\n"
        f"    IdentityFile {key}\n",
        encoding="utf-8",
    )
    return config


def _with_jump_pinned(spec: LabSpec, tmp_path: Path, jump_address: str, board_key: str | None = None) -> Path:
    """The lab's known_hosts plus the gateway's key ([address]:2222), the board's replaced by
    ``board_key`` when given."""
    pc_key = " ".join(
        (spec.host_dir("pc") / "ssh_host_ed25519_key.pub").read_text(encoding="utf-8").split()[:2]
    )
    lines = (spec.state_dir / "known_hosts").read_text(encoding="utf-8").splitlines()
    if board_key is not None:
        lines = [
            f"{spec.mgmt_address('pi')} {board_key}"
            if line.startswith(f"{spec.mgmt_address('pi')} ")
            else line
            for line in lines
        ]
    known = tmp_path / f"known_hosts{'-wrong' if board_key else ''}"
    known.write_text("\n".join([*lines, f"[{jump_address}]:{JUMP_PORT} {pc_key}"]) + "\n", encoding="utf-8")
    return known


def _alias_env(env: dict[str, Any], tmp_path: Path, config: Path, known: Path) -> dict[str, Any]:
    data = _env_without_identity(env, tmp_path, config=str(config), known_hosts=str(known))
    data["targets"]["pi"]["resources"]["NetworkService"]["address"] = "lab-board"
    return data


def test_an_ssh_config_alias_reaches_the_board_through_a_proxyjump_host_pinned(
    namespace_lab, jump_sshd, no_user_keys, tmp_path
):
    spec, env = namespace_lab
    config = _ssh_config(spec, tmp_path, jump_sshd)
    data = _alias_env(env, tmp_path, config, _with_jump_pinned(spec, tmp_path, jump_sshd))
    board = _board(data, tmp_path)
    try:
        # The board's sshd saw the connection come from the gateway, not from this machine.
        client = board.check(["sh", "-c", 'echo "$SSH_CONNECTION"']).split()
        assert client[0] == jump_sshd
        assert client[2] == spec.mgmt_address("pi")
        assert board.check(["id", "-un"]).strip() == "root"
    finally:
        board.close()


def test_a_wrong_pinned_key_is_refused_for_the_board_and_for_the_jump_host(
    namespace_lab, jump_sshd, no_user_keys, tmp_path
):
    spec, env = namespace_lab
    config = _ssh_config(spec, tmp_path, jump_sshd)
    # The board's pin names another host's key (the peer's): a different machine answered.
    inet_key = " ".join(
        (spec.host_dir("inet") / "ssh_host_ed25519_key.pub").read_text(encoding="utf-8").split()[:2]
    )
    wrong = _alias_env(
        env, tmp_path, config, _with_jump_pinned(spec, tmp_path, jump_sshd, board_key=inet_key)
    )
    with pytest.raises(LabFault) as bad_board:
        _board(wrong, tmp_path, "wrong.yaml").run(["true"])
    assert bad_board.value.category == "ssh"
    assert "BadHostKeyException" in str(bad_board.value)
    assert spec.mgmt_address("pi") in str(bad_board.value)
    # The lab's own known_hosts does not pin the gateway: it is refused, never added.
    unpinned = _alias_env(env, tmp_path, config, spec.state_dir / "known_hosts")
    with pytest.raises(LabFault) as bad_jump:
        _board(unpinned, tmp_path, "unpinned.yaml").run(["true"])
    assert bad_jump.value.category == "ssh"
    assert f"[{jump_sshd}]:{JUMP_PORT}" in str(bad_jump.value)
    assert "not found in known_hosts" in str(bad_jump.value)
    assert not (no_user_keys / ".ssh" / "known_hosts").exists()  # nothing learnt on the side
