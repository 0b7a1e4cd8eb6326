"""ssh_config as OpenSSH users write it: what pinet dials, as whom, through which jump hosts,
and the env mistakes that are errors at load time rather than lab faults in the night."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_pinet.errors import ConfigError
from pytest_pinet.host.ssh_route import auth_kwargs, read_config, resolve
from pytest_pinet.lab.inventory import load_inventory

from .test_inventory import _env

CONFIG = """\
Host lab-pi4
    HostName 10.0.0.41
    IdentityFile {key}
    IdentitiesOnly yes
    ProxyJump gw,admin@gw2:2200
Host gw
    HostName 10.0.0.254
    User jumper
    Port 2022
Host gw2
    HostName 10.0.0.253
Host lab-loose
    HostName 10.0.0.42
    IdentityFile ~/.ssh/does-not-exist
"""


def _config(tmp_path: Path, text: str = CONFIG) -> Path:
    key = tmp_path / "lab_key"
    key.write_text("key")
    path = tmp_path / "ssh_config"
    path.write_text(text.format(key=key))
    return path


def test_an_alias_resolves_to_its_hostname_key_and_jumps_in_order(tmp_path):
    path = _config(tmp_path)
    route = resolve("lab-pi4", "root", 22, read_config(path), str(path))
    assert (route.target.host, route.target.user, route.target.port) == ("10.0.0.41", "root", 22)
    assert route.target.identities == (str(tmp_path / "lab_key"),) and route.target.identities_only
    assert [str(hop) for hop in route.jumps] == ["jumper@10.0.0.254:2022", "admin@10.0.0.253:2200"]
    # A plain address is dialled as it is; a missing IdentityFile is skipped, as OpenSSH does.
    assert resolve("10.9.9.9", "lab", 2222, read_config(path), str(path)).target.host == "10.9.9.9"
    assert resolve("lab-loose", "lab", 22, read_config(path), str(path)).target.identities == ()
    off = _config(tmp_path, "Host *\n    ProxyCommand none\n    ProxyJump none\n")
    assert resolve("10.9.9.9", "lab", 22, read_config(off), str(off)).jumps == ()


def test_keys_tried_follow_openssh_and_the_lab_key_stays_exclusive_for_lab_hosts(tmp_path):
    path = _config(tmp_path)
    route = resolve("lab-pi4", "root", 22, read_config(path), str(path))
    loose = resolve("lab-loose", "lab", 22, read_config(path), str(path)).target
    assert auth_kwargs(loose, None, None) == {"key_filename": [], "allow_agent": True, "look_for_keys": True}
    only = auth_kwargs(route.target, None, "pw")
    assert only["allow_agent"] is False and only["key_filename"] == [str(tmp_path / "lab_key")]
    assert only["password"] == "pw"
    lab_key = tmp_path / "id"
    assert auth_kwargs(loose, lab_key, None)["allow_agent"] is False  # the env's key, and only it
    assert auth_kwargs(route.target, lab_key, None)["key_filename"] == [str(lab_key)]
    jump = auth_kwargs(route.jumps[0], lab_key, None, jump=True)
    assert jump["allow_agent"] is True and jump["key_filename"] == [str(lab_key)]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Host a\n  ProxyCommand nc %h %p\n", "Host a: proxycommand is not followed"),
        ("Host a\n  ProxyJump gw\n", "jump host gw has no user"),
        ("Host a\n  ProxyJump u@gw\nHost gw\n  ProxyJump u@gw0\n", "a ProxyJump of its own"),
        ("Host a\n  ProxyJump u@gw:99999\n", "Host gw: port '99999' is not 1..65535"),
        ("Host a\n  ProxyJump u@g;w\n", "is not [user@]host[:port]"),
    ],
)
def test_a_route_pinet_will_not_follow_is_a_config_error_naming_the_file(tmp_path, text, says):
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError, match="ssh_config") as info:
        resolve("a", "root", 22, read_config(path), str(path))
    assert says in str(info.value)


def _write(tmp_path: Path, **ssh) -> Path:
    env = _env(tmp_path)
    del env["pinet"]["ssh"]["identity"]
    env["pinet"]["ssh"].update(ssh)
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(env))
    return path


def test_the_env_names_its_ssh_config_or_none_and_identity_is_optional(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    inventory = load_inventory(_write(tmp_path))
    assert inventory.hosts["pi"].endpoint.identity is None
    assert inventory.hosts["pi"].endpoint.ssh_config is None  # no ~/.ssh/config: none read
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "config").write_text("Host *\n  ServerAliveInterval 15\n")
    default = load_inventory(_write(tmp_path)).hosts["pi"].endpoint.ssh_config
    assert default == tmp_path / "home" / ".ssh" / "config"  # read as OpenSSH would
    assert load_inventory(_write(tmp_path, config="none")).hosts["pi"].endpoint.ssh_config is None
    assert load_inventory(_write(tmp_path, config=False)).hosts["pi"].endpoint.ssh_config is None
    _config(tmp_path)
    named = load_inventory(_write(tmp_path, config="ssh_config")).hosts["pc"].endpoint
    assert named.ssh_config == tmp_path / "ssh_config"


def test_ssh_mistakes_in_the_env_name_the_file_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"pinet.ssh: unknown keys \['proxy'\]"):
        load_inventory(_write(tmp_path, proxy="gw"))
    with pytest.raises(ConfigError, match=r"pinet.ssh.config must be a path"):
        load_inventory(_write(tmp_path, config=True))
    with pytest.raises(ConfigError, match=r"pinet.ssh.config: .*does not exist"):
        load_inventory(_write(tmp_path, config="missing_config"))
    _config(tmp_path, "Host 10.0.0.1\n  ProxyCommand nc %h %p\n")
    with pytest.raises(ConfigError, match="proxycommand is not followed"):
        load_inventory(_write(tmp_path, config="ssh_config"))
