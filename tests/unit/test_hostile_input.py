"""Hostile input, fuzzed: every user file and option either loads or fails with a ConfigError
naming its source; no other exception, no traceback.  Commands built from hostile text reach
a real shell as literal arguments (no injection), and registered secrets never come out.

Each input is a valid file (the shipped thresholds and profiles, a lab env file) with one
part replaced by something hostile: shell metacharacters, command substitutions, path
traversal, newlines, control characters, huge or negative numbers, wrong types, unknown keys.
"""

from __future__ import annotations

import copy
import functools
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_pinet import redaction
from pytest_pinet.errors import ConfigError, PinetError
from pytest_pinet.host.profiles import Profile, load_profiles, profiles_from_data
from pytest_pinet.host.shell import quote
from pytest_pinet.judge.threshold_rules import Thresholds, load_thresholds, thresholds_from_data
from pytest_pinet.lab.inventory import Inventory, inventory_from_data, load_inventory
from pytest_pinet.plugin.option_sources import check_named_lab_files
from pytest_pinet.plugin.option_values import coordinator_address, place_tags, positive_int
from tests.fixture_paths import EXAMPLE_ENV

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
# libyaml's emitter where PyYAML has it: what it writes, any YAML reader reads the same.
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
EXAMPLES = 300

HOSTILE_TEXT = [
    "eth0; reboot",
    "$(reboot)",
    "`id`",
    "eth0 && rm -rf /",
    "../../etc/shadow",
    "eth0\nreboot",
    "'; DROP TABLE measurements; --",
    "|nc 10.0.0.1 4444",
    "eth0>/dev/sda",
    "\x00",
    "\x1b[2J",
    "a" * 5000,
    "",
    " ",
    "-rf",
    "--help",
    "${IFS}",
    "* ?",
    "üñí©ødé",
    "!template $HOME",
]
HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.sampled_from(HOSTILE_TEXT), max_size=3),
    st.dictionaries(st.sampled_from(HOSTILE_TEXT), st.sampled_from(HOSTILE_TEXT), max_size=2),
)


# YAML keys may be numbers, booleans or null as well as text.
HOSTILE_KEY = st.one_of(st.sampled_from(HOSTILE_TEXT), st.integers(-3, 3), st.booleans(), st.none())


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into nested dicts and lists."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _paths(value, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, valid: Any) -> Any:
    """``valid`` with one value replaced, one key renamed, or one key added, hostilely."""
    data = copy.deepcopy(valid)
    paths = _paths(data)
    path = draw(st.sampled_from(paths))
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    how = draw(st.sampled_from(["value", "key", "extra"]))
    if how == "value" or not isinstance(parent, dict):
        parent[path[-1]] = draw(HOSTILE)
    elif how == "key":
        parent[draw(HOSTILE_KEY)] = parent.pop(path[-1])
    else:
        parent[draw(HOSTILE_KEY)] = draw(HOSTILE)
    return data


@functools.cache
def _parsed(name: str) -> Any:
    return yaml.safe_load((ROOT / "pytest_pinet" / "data" / name).read_text())


def _yaml(name: str) -> Any:
    """A fresh copy of a shipped file's data for each example to mutate: parsing the
    thresholds file at each of 300 examples took 7.5 of the test's 11 s."""
    return copy.deepcopy(_parsed(name))


@functools.cache
def _example_env() -> Any:
    return yaml.safe_load(EXAMPLE_ENV.read_text())


def _env_file(tmp: Path) -> dict[str, Any]:
    """The example env file's data, a fresh copy for each example (parsed once: PyYAML's own
    parser and emitter took 50 of the two env tests' 55 s on one core)."""
    (tmp / "known_hosts").write_text("10.0.0.1 ssh-ed25519 AAAA\n")
    data = copy.deepcopy(_example_env())
    data["pinet"]["ssh"] = {"known_hosts": str(tmp / "known_hosts")}
    return dict(data)


def loads_or_names(source: str, load: Callable[[], T]) -> T | None:
    """``load()``'s result, or None after a ConfigError that starts with ``source``; any
    other exception fails the test (it would reach the user as a traceback)."""
    try:
        return load()
    except ConfigError as exc:
        error = exc
    assert str(error).startswith(source), error
    return None


FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _is_thresholds(loaded: Any) -> bool:
    return isinstance(loaded, Thresholds)


def _is_profiles(loaded: Any) -> bool:
    return all(isinstance(profile, Profile) for profile in loaded.values())


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize(
    ("name", "load", "loaded_ok"),
    [
        ("thresholds.yaml", thresholds_from_data, _is_thresholds),
        ("profiles.yaml", profiles_from_data, _is_profiles),
    ],
)
def test_hostile_shipped_files_load_or_name_their_source(name, load, loaded_ok, data):
    hostile = data.draw(mutated(_yaml(name)))
    source = f"fuzzed-{name}"
    loaded = loads_or_names(source, lambda: load(hostile, source))
    assert loaded is None or loaded_ok(loaded)


@FUZZ
@given(st.data())
def test_hostile_env_files_load_or_name_their_source(tmp_path, data):
    hostile = data.draw(mutated(_env_file(tmp_path)))
    inventory = loads_or_names(
        "fuzzed-env.yaml", lambda: inventory_from_data(hostile, Path("fuzzed-env.yaml"))
    )
    if inventory is None:
        return
    assert isinstance(inventory, Inventory)
    # What loaded is safe to put into a command: names are plain, addresses are addresses.
    for link in inventory.links:
        for name in (link.board_interface, link.peer_interface):
            assert name == quote([name]), name


@FUZZ
@given(blob=st.binary(max_size=300))
@pytest.mark.parametrize("load", [load_inventory, load_thresholds, load_profiles])
def test_any_bytes_as_a_lab_file_fail_cleanly(tmp_path, load, blob):
    path = tmp_path / "garbage.yaml"
    path.write_bytes(blob)
    loads_or_names(str(path), lambda: load(path))


LAB_WAYS = ["--pinet-lab", "--lg-env", "LG_ENV", "PINET_LAB", "ini option pinet_lab"]


@FUZZ
@given(blob=st.binary(max_size=300), way=st.sampled_from(LAB_WAYS))
def test_any_bytes_named_as_a_lab_any_way_fail_naming_the_way(tmp_path, blob, way):
    # What labgrid's own plugin would read next: it must either be a readable env (a mapping
    # with targets) or stop the run with an error that names how the lab was named.
    path = tmp_path / "named.yaml"
    path.write_bytes(blob)
    loads_or_names(way, lambda: check_named_lab_files(str(path), way))


@FUZZ
@given(data=st.data(), way=st.sampled_from(LAB_WAYS))
def test_hostile_env_files_named_any_way_fail_naming_the_way(tmp_path, data, way):
    hostile = data.draw(mutated(_env_file(tmp_path)))
    path = tmp_path / "named.yaml"
    path.write_text(yaml.dump(hostile, Dumper=DUMPER, allow_unicode=True))
    loads_or_names(way, lambda: check_named_lab_files(str(path), way))


def test_unknown_tunable_is_named():
    data = _yaml("profiles.yaml")
    name = next(iter(data["profiles"]))
    data["profiles"][name]["board"] = {"turbo_boost": "on"}
    with pytest.raises(ConfigError) as info:
        profiles_from_data(data, "profiles.yaml")
    assert "turbo_boost" in str(info.value) and "profiles.yaml" in str(info.value)


@FUZZ
@given(st.text(max_size=60))
def test_option_values_parse_or_name_the_option(text):
    loads_or_names("--pinet-option", lambda: coordinator_address(text, "--pinet-option"))
    loads_or_names("--pinet-option", lambda: place_tags(text, "--pinet-option"))
    loads_or_names("--pinet-option", lambda: positive_int(text, "--pinet-option"))


ARGUMENT = st.one_of(
    st.sampled_from(HOSTILE_TEXT[:-11] + HOSTILE_TEXT[-10:]),  # all but the NUL byte
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30),
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(ARGUMENT, min_size=1, max_size=6))
def test_quoted_commands_reach_a_real_shell_as_literal_arguments(argv):
    # The remote side runs the line through a POSIX shell: so does this test.  printf gets
    # exactly our arguments back, whatever they contain, or the quoting let something through.
    line = quote(["printf", "%s\\0", *argv])
    done = subprocess.run(["sh", "-c", line], capture_output=True, check=True)
    assert done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1] == argv


def test_secrets_are_masked_in_logs_facts_and_text(tmp_path, caplog):
    from pytest_pinet.record.results_dir import ResultsDir

    secret = "hunter2-lab-Pa55"
    redaction.register(secret)
    # paramiko's own level is set (on first connection) too, so the debug line is really emitted.
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="paramiko"):
        logging.getLogger("paramiko.transport").debug("auth with password %s failed", secret)
        logging.getLogger("pytest_pinet.host.remote").warning(f"login as root:{secret}@10.0.0.1")
    assert secret not in caplog.text and caplog.text.count("***") == 2
    results = ResultsDir(tmp_path, "run1")
    results.record_fact("lab-fault", {"message": f"ssh root:{secret}@pc failed", "nested": [secret]})
    written = (tmp_path / "run1" / "facts.jsonl").read_text()
    assert secret not in written and written.count("***") == 2
    assert redaction.mask(f"x{secret}y") == "x***y"
    assert redaction.mask("no secret here") == "no secret here"


def test_env_file_password_is_registered_and_never_repr(tmp_path):
    data = _env_file(tmp_path)
    target = next(iter(data["targets"].values()))
    target["resources"]["NetworkService"]["password"] = "pw-from-env-file-77"
    inventory = inventory_from_data(data, Path("env.yaml"))
    assert all("pw-from-env-file-77" not in repr(h.endpoint) for h in inventory.hosts.values())
    assert redaction.mask("leak: pw-from-env-file-77") == "leak: ***"


def test_pinet_errors_never_carry_a_traceback_for_bad_files(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text("targets: [\n")
    with pytest.raises(PinetError) as info:
        load_inventory(path)
    assert "malformed YAML at line" in str(info.value)
