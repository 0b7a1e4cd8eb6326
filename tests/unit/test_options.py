"""The options table: one default each, layering, errors naming their source, help, ini types and
the options page's table, all checked against the table itself so a new option is covered by adding it."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from pytest_pinet.errors import ConfigError
from pytest_pinet.plugin.option_sources import any_given, resolve, value_of
from pytest_pinet.plugin.options import DATA, OPTIONS, markdown_table
from pytest_pinet.session.settings import PinetSettings

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {option.name: option for option in OPTIONS}
DURATION = BY_NAME["duration"]
NOTHING: dict[str, object] = {}  # no option, no ini key, no environment variable


def settings(root, options=None, ini=None, env=None):
    """resolve() with plain dicts standing in for pytest: a missing key is "not given"."""
    return resolve((options or {}).get, (ini or {}).get, env or {}, root)


def run(pytester, *args):
    # labgrid's own plugin keeps process-global state that refuses a second in-process run.
    return pytester.runpytest("-p", "no:labgrid", *args)


def test_the_table_has_one_option_per_setting():
    names = [option.name for option in OPTIONS]
    assert len(names) == len(set(names))
    # lab_source is not a setting but where the lab setting came from (the header shows it)
    assert set(names) == {field.name for field in dataclasses.fields(PinetSettings)} - {"lab_source"}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
def test_every_default_is_a_value_a_user_could_give(option):
    option.parse(option.default, f"default of {option.ini}")


def _lab_data(root):
    """The rootdir's own lab data files, which the defaults of thresholds and profiles name."""
    (root / "lab").mkdir(parents=True)
    for name in ("thresholds", "profiles"):
        (root / "lab" / f"{name}.yaml").write_text("{}\n")


def test_the_defaults_are_the_ones_pinet_always_had(tmp_path):
    _lab_data(tmp_path)
    assert settings(tmp_path) == PinetSettings(
        lab="virtual",
        results=tmp_path / "results",
        thresholds=tmp_path / "lab" / "thresholds.yaml",
        profiles=tmp_path / "lab" / "profiles.yaml",
        duration=10,  # on the virtual lab; 20 on a lab's hardware
        omit=1,  # on the virtual lab; 2 on a lab's hardware
        streams=10,
        keep_lab=False,
        remeasure=2,  # 1 on the virtual lab and 0 on hardware until issue 62 (confirm before red)
        db="",
        virtual_lab="pinet",
        baseline_window=10,
        baseline_min=2,
        baseline_band=0.5,  # 1.0 until issue 18's sensitivity bench
        adaptive=True,
        adaptive_min=3,  # on the virtual lab; 5 on a lab's hardware
        adaptive_precision=0.5,
        detect=None,  # no drop asked for (--pinet-detect)
        max_temp=80.0,
        udp_duration=3,  # on the virtual lab; 5 on a lab's hardware
        storage_mib=8,
        board="both",
        board_image="debian12-k6.1",
        qemu_accel="tcg",
        places=0,
        coordinator="",
        place_tags=(),
        place_wait=1800,
        boards=(),
        image=(),
        repeat=1,
        out_of_service_after=3,  # failed nightly health checks in a row (issue 63)
        return_when="returned",
        allow_skips=False,
        lab_source="default of pinet_lab",
    )


@pytest.mark.parametrize(
    ("options", "env", "ini", "expected"),
    [
        ({"--pinet-duration": "3"}, {"PINET_DURATION": "4"}, {"pinet_duration": 5}, 3),
        ({}, {"PINET_DURATION": "4"}, {"pinet_duration": 5}, 4),
        ({}, {"PINET_DURATION": ""}, {"pinet_duration": 5}, 5),  # an empty variable is not set
        ({}, {}, {"pinet_duration": 5}, 5),
        ({}, {}, {"pinet_duration": "6"}, 6),  # pytest < 8.4 declares the key a string
        ({}, {}, {}, 10),  # the virtual lab's: two boards in turn on one shared host
        ({"--pinet-lab": "lab.yaml"}, {}, {}, 20),  # a lab's hardware
    ],
    ids=["option", "env", "empty-env", "ini", "ini-string", "default", "default-hardware"],
)
def test_each_source_wins_in_order(tmp_path, options, env, ini, expected):
    (tmp_path / "lab.yaml").write_text("targets: {pi: {}}\n")
    options = {
        key: str(tmp_path / value) if key == "--pinet-lab" else value for key, value in options.items()
    }
    assert settings(tmp_path, options, ini, env).duration == expected


@pytest.mark.parametrize(
    ("field", "options", "env", "expected"),
    [
        ("adaptive_min", {}, {}, 3),  # the virtual lab's token-bucket cables
        ("adaptive_min", {"--pinet-lab": "lab.yaml"}, {}, 5),  # a lab's hardware
        ("adaptive_min", {"--pinet-lab": "lab.yaml", "--pinet-adaptive-min": "4"}, {}, 4),
        ("omit", {}, {}, 1),  # the virtual lab's cables: at line rate from the second second
        ("omit", {"--pinet-lab": "lab.yaml"}, {}, 2),
        ("omit", {"--pinet-omit": "0"}, {}, 0),
        ("udp_duration", {}, {}, 3),  # the virtual lab's shaped cable
        ("udp_duration", {"--pinet-lab": "lab.yaml"}, {}, 5),
        ("udp_duration", {}, {"PINET_UDP_DURATION": "7"}, 7),
    ],
    ids=[
        f"{name}-{case}"
        for name in ("adaptive-min", "omit", "udp")
        for case in ("virtual", "hardware", "asked")
    ],
)
def test_a_lab_dependent_default_is_the_lab_s_unless_asked(tmp_path, field, options, env, expected):
    (tmp_path / "lab.yaml").write_text("targets: {pi: {}}\n")
    options = {
        key: str(tmp_path / value) if key == "--pinet-lab" else value for key, value in options.items()
    }
    assert getattr(settings(tmp_path, options, {}, env), field) == expected


@pytest.mark.parametrize(
    ("options", "env", "ini", "expected"),
    [
        ({"--pinet-keep-lab": True}, {"PINET_KEEP_LAB": "off"}, {"pinet_keep_lab": False}, True),
        ({}, {"PINET_KEEP_LAB": "ON"}, {"pinet_keep_lab": False}, True),
        ({}, {}, {"pinet_keep_lab": True}, True),
        ({}, {}, {}, False),
    ],
    ids=["option", "env", "ini", "default"],
)
def test_a_flag_layers_like_any_option(tmp_path, options, env, ini, expected):
    assert settings(tmp_path, options, ini, env).keep_lab is expected


def test_a_bool_ini_key_is_read_as_on_or_off(tmp_path):
    assert settings(tmp_path, ini={"pinet_adaptive": False}).adaptive is False
    assert settings(tmp_path, ini={"pinet_adaptive": False}, env={"PINET_ADAPTIVE": "on"}).adaptive is True


@pytest.mark.parametrize(
    ("options", "env", "ini", "message"),
    [
        ({"--pinet-duration": "ten"}, {}, {}, "--pinet-duration: expected a whole number, got 'ten'"),
        ({}, {"PINET_DURATION": "ten"}, {}, "PINET_DURATION: expected a whole number, got 'ten'"),
        ({}, {}, {"pinet_duration": "ten"}, "ini option pinet_duration: expected a whole number, got 'ten'"),
        ({}, {}, {"pinet_duration": 0}, "ini option pinet_duration: must be at least 1, got 0"),
        ({}, {"PINET_ADAPTIVE": "maybe"}, {}, "PINET_ADAPTIVE: expected on or off, got 'maybe'"),
        ({}, {"PINET_KEEP_LAB": "yes"}, {}, "PINET_KEEP_LAB: expected on or off, got 'yes'"),
        ({"--pinet-places": "100"}, {}, {}, "--pinet-places: at most 99 virtual places"),
        ({}, {}, {"pinet_max_temp": 130.0}, "ini option pinet_max_temp: must be 20..125 degrees Celsius"),
        (
            {"--pinet-board": "vmware"},
            {},
            {},
            "--pinet-board: expected one of both, netns, qemu, got 'vmware'",
        ),
        ({}, {"PINET_PLACE_TAGS": "Board=x"}, {}, "PINET_PLACE_TAGS: tag 'Board=x' is not KEY=VALUE"),
        ({}, {"PINET_LAB": "/nonexistent/env.yaml"}, {}, "PINET_LAB: lab env file '/nonexistent/env.yaml'"),
    ],
)
def test_a_bad_value_names_its_source(tmp_path, options, env, ini, message):
    with pytest.raises(ConfigError) as caught:
        settings(tmp_path, options, ini, env)
    assert str(caught.value).startswith(message)


def test_a_bad_default_names_itself():
    broken = dataclasses.replace(DURATION, default="ten")
    with pytest.raises(ConfigError, match=r"^default of pinet_duration: expected a whole number, got 'ten'$"):
        value_of(broken, NOTHING.get, NOTHING.get, {})


def test_an_ini_value_pytest_cannot_convert_names_the_key_unless_overridden():
    def getini(name):
        raise pytest.UsageError("invalid literal for int() with base 10: 'ten'")

    assert value_of(DURATION, {"--pinet-duration": "3"}.get, getini, {}) == 3
    assert value_of(DURATION, NOTHING.get, getini, {"PINET_DURATION": "4"}) == 4
    with pytest.raises(
        ConfigError, match=r"^ini option pinet_duration: expected a value of type \w+ \(invalid"
    ):
        value_of(DURATION, NOTHING.get, getini, {})


def test_every_lab_confirms_a_suspect_result_twice_by_default(tmp_path):
    env_file = tmp_path / "lab.yaml"
    env_file.write_text("targets: {}\n")
    assert settings(tmp_path, {"--pinet-lab": str(env_file)}).remeasure == 2
    assert settings(tmp_path, {"--pinet-lab": "virtual"}).remeasure == 2
    assert settings(tmp_path, {"--pinet-lab": str(env_file)}, env={"PINET_REMEASURE": "4"}).remeasure == 4
    assert settings(tmp_path, ini={"pinet_remeasure": 0}).remeasure == 0


def test_relative_paths_are_under_the_rootdir(tmp_path):
    _lab_data(tmp_path / "root")
    elsewhere = tmp_path / "elsewhere" / "t.yaml"
    got = settings(tmp_path / "root", {"--pinet-results": "out"}, env={"PINET_THRESHOLDS": str(elsewhere)})
    assert got.results == tmp_path / "root" / "out"
    assert got.thresholds == elsewhere
    assert got.profiles == tmp_path / "root" / "lab" / "profiles.yaml"


HOSTILE = ["", " ", "-1", "1e9", "nan", "0x10", "a,b", "=", "on\n", "\u00e9t\u00e9", "x" * 300, "../../etc"]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.name)
@pytest.mark.parametrize("value", HOSTILE)
def test_any_text_parses_or_names_its_source(option, value):
    refused = None
    try:
        option.parse(value, option.env)
    except ConfigError as exc:
        refused = exc
    assert refused is None or refused.source == option.env


def _help_of(lines, flag):
    """The help text of one option in `pytest --help`, joined over its wrapped lines."""
    start = next(i for i, line in enumerate(lines) if line.split() and line.split()[0].split("=")[0] == flag)
    text = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.strip() or line.lstrip().startswith("--"):
            break
        text.append(line)
    return " ".join(" ".join(text).split())


def test_help_states_every_default_and_declares_the_ini_types(pytester):
    result = run(pytester, "--help")
    lines = result.stdout.lines
    for option in OPTIONS:
        assert f"(default: {option.shown_default})" in _help_of(lines, option.cli), option.cli
        result.stdout.fnmatch_lines([f"  {option.ini} ({option.declared_ini_type}):*"])


def test_help_shows_percent_signs_once(pytester):
    result = run(pytester, "--help")
    assert "95% confidence" in " ".join(result.stdout.str().split())


def test_ini_keys_layer_and_fail_through_real_pytest(pytester, monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    pytester.makeini("[pytest]\npinet_duration = 7\npinet_adaptive = off\npinet_max_temp = 70.5\n")
    result = run(pytester)
    result.stdout.fnmatch_lines(["pinet: results *; iperf3 -P 10 -t 7 -O 1"])
    result.stdout.no_fnmatch_line("*adaptive*")
    pytester.makeini("[pytest]\npinet_duration = ten\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option pinet_duration*ten*"])
    result = run(pytester, "--pinet-duration", "9")  # the option wins; the broken key is never read
    result.stdout.fnmatch_lines(["pinet: results *; iperf3 -P 10 -t 9 -O 1*"])
    monkeypatch.setenv("PINET_KEEP_LAB", "maybe")
    result = run(pytester, "--pinet-duration", "9")
    result.stderr.fnmatch_lines(["*PINET_KEEP_LAB: expected on or off, got 'maybe'*"])


@pytest.mark.parametrize(
    ("options", "ini", "given"),
    [
        ({}, {}, False),
        ({"--pinet-keep-lab": True}, {}, True),
        ({"--pinet-db": ""}, {}, True),  # given empty on purpose: still given
        ({}, {"pinet_places": 0}, True),  # 0 == False in Python: must still count as set
        ({}, {"pinet_adaptive": False}, True),
        ({}, {"pinet_db": ""}, False),  # an empty ini value is not set, as in value_of
    ],
)
def test_any_given_counts_every_set_value(options, ini, given):
    assert any_given(options.get, ini.get) is given


def test_any_given_counts_a_broken_ini_key_so_resolve_can_name_it():
    def getini(name):
        raise pytest.UsageError("invalid literal for int() with base 10: 'ten'")

    assert any_given(NOTHING.get, getini)


def test_markdown_table_has_one_row_per_option():
    lines = markdown_table().splitlines()
    assert lines[0] == "| option | env var | ini key | default | meaning |"
    assert len(lines) == 2 + len(OPTIONS)
    for option, row in zip(OPTIONS, lines[2:], strict=True):
        cells = [cell.strip() for cell in row.replace("\\|", "\0").strip("|").split("|")]
        assert len(cells) == 5, row
        assert cells[0].startswith(f"`{option.cli}")
        aliases = "".join(f", `{alias.env}`" for alias in option.aliases)
        assert cells[1:3] == [f"`{option.env}`{aliases}", f"`{option.ini}`"]
        assert cells[3].replace("\0", "|").strip("`") == option.shown_default
        assert cells[4].replace("\0", "|") == option.help


def test_the_options_page_has_the_generated_table():
    assert markdown_table() in (REPO / "docs" / "options.md").read_text(), (
        "docs/options.md's table is out of date; paste pytest_pinet.plugin.options.markdown_table() over it"
    )


def test_labgrids_names_for_the_lab_and_the_coordinator_are_aliases(tmp_path):
    lab = tmp_path / "rpi.yaml"
    lab.write_text("{}\n")
    other = tmp_path / "other.yaml"
    other.write_text("{}\n")
    by_option = settings(tmp_path, options={"--lg-env": str(lab), "--lg-coordinator": "127.0.0.1:20408"})
    assert (by_option.lab, by_option.coordinator) == (str(lab), "127.0.0.1:20408")
    by_env = settings(tmp_path, env={"LG_ENV": str(lab), "LG_COORDINATOR": "127.0.0.1:20408"})
    assert (by_env.lab, by_env.coordinator) == (str(lab), "127.0.0.1:20408")
    # the same value under both names is fine; pinet's option above labgrid's environment too
    same = settings(tmp_path, options={"--pinet-lab": str(lab), "--lg-env": str(lab)})
    assert same.lab == str(lab)
    assert settings(tmp_path, options={"--pinet-lab": str(lab)}, env={"LG_ENV": str(other)}).lab == str(lab)


@pytest.mark.parametrize(
    ("options", "env", "named"),
    [
        ({"--pinet-lab": "a.yaml", "--lg-env": "b.yaml"}, {}, "--pinet-lab 'a.yaml' and --lg-env 'b.yaml'"),
        ({}, {"PINET_LAB": "a.yaml", "LG_ENV": "b.yaml"}, "PINET_LAB 'a.yaml' and LG_ENV 'b.yaml'"),
        (
            {"--pinet-coordinator": "127.0.0.1:1", "--lg-coordinator": "127.0.0.1:2"},
            {},
            "--pinet-coordinator '127.0.0.1:1' and --lg-coordinator '127.0.0.1:2'",
        ),
    ],
)
def test_two_names_that_disagree_are_an_error_naming_both(tmp_path, options, env, named):
    with pytest.raises(ConfigError, match="two names for") as info:
        settings(tmp_path, options=options, env=env)
    assert named in str(info.value)


def test_without_labgrids_plugin_its_options_are_simply_absent(tmp_path):
    def getoption(name):
        if name.startswith("--lg-"):
            raise ValueError(f"no option named {name!r}")  # what pytest says
        return None

    def getini(name: str) -> object:
        return None

    assert resolve(getoption, getini, {}, tmp_path).lab == "virtual"


def test_a_lab_file_in_this_repository_never_moves_its_own_tests_floors(tmp_path):
    """The repository's lab/ is an example a lab copies: the environment its tests run in (the
    root conftest) names the shipped rules, so a lab/thresholds.yaml planted at a rootdir (the
    repository's, or any other these tests run pinet in) is not what they judge by; a lab's
    own rootdir, without that environment, still reads its file."""
    _lab_data(tmp_path)
    for name in ("thresholds", "profiles"):
        assert (tmp_path / "lab" / f"{name}.yaml").is_file()
    ours = settings(tmp_path, env=dict(os.environ))
    assert (ours.thresholds, ours.profiles) == (DATA / "thresholds.yaml", DATA / "profiles.yaml")
    a_lab = settings(tmp_path, env={})
    assert a_lab.thresholds == tmp_path / "lab" / "thresholds.yaml"
