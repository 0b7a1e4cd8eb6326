"""The CI recipes of lab/ci run as written, as far as a machine without a runner allows.

The GitLab job's lines are taken from the YAML and run in a scratch copy of a lab's
repository (ci/pinet-ci.sh, lab/rpi-lab.yaml). ``setup`` runs as written, with the lab's own
index named (PINET_INDEX_URL): a package index on 127.0.0.1 holding the wheel built from this
checkout and what it needs (tests/package_index.py), while the runner's pip also names a second
local index with a planted ``pytest-pinet`` 99.0, which is never installed; pinet goes into a
fresh venv and the Allure 3 CLI into .allure from npm (nothing is linked from this checkout).
With no source named, setup stops with the reason. A night of a small stand-in
suite (fake measurements of lab "bench", no hardware) without the Allure CLI runs in that
repository. The GitLab job's and the GitHub workflow's nights on a lab, with the key and the
pages, are the rehearsal's (test_rehearsal.py). The Jenkinsfile's steps are the same
commands, which the test checks line by line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_pinet.exit_codes import Exit
from tests.fixture_paths import RECIPES

from .. import package_index
from ..lab_example import keyed_example

REPO = Path(__file__).resolve().parents[2]
SUITE = (REPO / "tests" / "integration" / "test_allure_runs.py").read_text(encoding="utf-8")
FAKE_SUITE = re.search(r'TESTS = """\n(.*?)"""', SUITE, re.S)
THRESHOLDS = "replace: true\nrules:\n  - {id: gbe, match: {scenario: ethernet}, min_mbps: 940}\n"
# Beside the stand-in suite: the night's tests see the lab's key in the job's ssh-agent, the
# way pinet then logs in with no identity in the env file (test_ssh_as_users_have_it.py).
KEY_TEST = """
import os
import subprocess


def test_the_night_holds_the_labs_key_in_its_agent():
    listed = subprocess.run(["ssh-add", "-l"], capture_output=True, text=True, check=False).stdout
    assert os.environ["EXPECTED_KEY"] in listed, listed
"""


def _lab_repository(root: Path) -> Path:
    """A lab's repository as the recipes expect it, before ``setup``."""
    (root / "ci").mkdir(parents=True)
    (root / "lab").mkdir()
    shutil.copy(RECIPES / "pinet-ci.sh", root / "ci" / "pinet-ci.sh")
    keyed_example(root / "lab")  # the example with the lab's own key and host keys
    (root / "suite").mkdir()
    assert FAKE_SUITE is not None
    (root / "suite" / "test_net.py").write_text(FAKE_SUITE.group(1), encoding="utf-8")
    (root / "suite" / "test_key.py").write_text(KEY_TEST, encoding="utf-8")
    (root / "thresholds.yaml").write_text(THRESHOLDS, encoding="utf-8")
    return root


def _runner_env() -> dict[str, str]:
    """The runner's environment: its PATH without this checkout's venv (setup makes the lab's
    own), nothing of this checkout's Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PINET_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(REPO) not in p)
    return env


def _setup(root: Path, named: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The job's ``before_script`` as written, with what the lab names (its source, extras)."""
    (line,) = _gitlab()["nightly-network"]["before_script"]
    variables = {k: str(v) for k, v in _gitlab()["variables"].items() if k != "PINET_WHEELHOUSE"}
    return subprocess.run(
        ["/bin/sh", "-c", line],
        cwd=root,
        env={**_runner_env(), **variables, **named},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def lab_index(built, tmp_path_factory) -> Iterator[dict[str, str]]:
    """The lab's own index (the wheel and what pip needs for it) and a second index with a
    planted pytest-pinet, both on 127.0.0.1, as the variables a runner would have: the lab's
    as PINET_INDEX_URL, the second as the runner's own pip configuration names it."""
    root = tmp_path_factory.mktemp("indexes")
    env = _runner_env()
    python = shutil.which("python3", path=env["PATH"])
    assert python is not None, "the runner has no python3"
    needs = package_index.download(
        python, [f"{built['wheel']}[lab,postgres,charts]", "pip"], root / "downloads", env
    )
    ours = package_index.lay_out(needs, root / "lab-index")
    planted = package_index.lay_out([package_index.planted_wheel(root / "planted")], root / "second-index")
    with package_index.served(ours) as url, package_index.served(planted) as second:
        yield {"PINET_INDEX_URL": url, "PIP_EXTRA_INDEX_URL": second}


@pytest.fixture(scope="module")
def set_up(lab_index, tmp_path_factory) -> Path:
    """A lab's repository after ``sh ci/pinet-ci.sh setup`` from the lab's own index with the
    extras the docs name: pytest-pinet and its dependencies in .venv, Allure in .allure."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the recipe's setup needs Node.js and npm (scripts/setup.sh installs them)")
    root = _lab_repository(tmp_path_factory.mktemp("set-up") / "lab-repo")
    done = _setup(root, lab_index)
    assert done.returncode == 0, f"setup: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "pinet-ci: pytest-pinet 0.1.0 from the lab's index, Node.js v" in done.stdout
    assert (
        not (root / ".venv").is_symlink()
        and (root / ".allure" / "node_modules" / "allure" / "cli.js").exists()
    )
    installed = subprocess.run(
        [str(root / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (pinet,) = [p for p in json.loads(installed.stdout) if p["name"] == "pytest-pinet"]
    assert pinet["version"] != package_index.PLANTED_VERSION  # the second index was never asked
    return root


def _fresh_night(root: Path) -> None:
    """The set-up repository as a new lab's: no results, pages or store of another test."""
    for left in ("results", "public"):
        shutil.rmtree(root / left, ignore_errors=True)
    for store in root.glob("store*.sqlite*"):
        store.unlink()


def _gitlab() -> dict[str, Any]:
    recipe: dict[str, Any] = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    return recipe


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _night_env(root: Path, recipe: dict[str, Any]) -> dict[str, str]:
    """What the runner's environment holds: the recipe's variables, the store, the lab's key
    as a CI File variable (a temporary file others may read), and for this stand-in night its
    suite and thresholds (pytest args pinet-ci.sh passes on)."""
    key = root / "ci-file-variable-PINET_SSH_KEY"
    shutil.copy(root / "lab" / "id_ed25519.example", key)
    key.chmod(0o644)
    listed = subprocess.run(["ssh-keygen", "-lf", str(key)], capture_output=True, text=True, check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")}
    return {
        **env,
        **{k: str(v) for k, v in recipe["variables"].items()},
        # this lab's owners read their news from files beside the repository
        "PINET_NOTIFY_LAB": f"cat >> {root}/told-lab",
        "PINET_NOTIFY_BOARDS": f"cat >> {root}/told-boards",
        "PINET_DB": f"sqlite:///{root}/store.sqlite",
        "PINET_SUITE": "suite",
        "PINET_SSH_KEY": str(key),
        "EXPECTED_KEY": listed.stdout.split()[1],
        "PYTEST_ADDOPTS": "--pinet-thresholds thresholds.yaml --pinet-remeasure 0",
    }


def test_a_night_whose_report_cannot_be_built_fails_visibly(set_up, tmp_path):
    recipe = _gitlab()
    root = set_up  # the lab's own install, its Allure CLI taken away for this night
    _fresh_night(root)
    env = _night_env(root, recipe)
    (line,) = recipe["nightly-network"]["script"]
    (root / ".allure").rename(root / ".allure-away")
    try:
        done = _run(line, root, env)
    finally:
        (root / ".allure-away").rename(root / ".allure")
    assert done.returncode == 6, done.stdout[-3000:]
    assert "pytest exit status: 0" in done.stdout  # every test passed, and still not green
    assert "REPORT NOT BUILT: Allure 3 CLI not found" in done.stdout
    assert "(--require-report) and not built: exit 6" in done.stdout
    published = _run(recipe["nightly-network"]["after_script"][0], root, env)
    assert (
        published.returncode == Exit.NO_REPORT
        and "no report in results/report to publish" in published.stderr
    )
    for line in recipe["pages"]["script"]:
        assert _run(line, root, env).returncode == Exit.NO_REPORT  # no pages from a night without a report
    told = (root / "told-lab").read_text(encoding="utf-8").splitlines()
    assert len(told) == 2 and all(": exit 6: " in line for line in told), told  # the night, then publish
    assert not (root / "told-boards").exists()
    # setup stops at once when the runner has no Node.js, before anything is installed.
    bare = _lab_repository(tmp_path / "bare-repo")
    no_node = _run("/bin/sh ci/pinet-ci.sh setup", bare, {**env, "PATH": str(tmp_path / "empty-bin")})
    assert no_node.returncode == Exit.MISSING_PREREQUISITE and "Node.js is missing" in no_node.stderr
    assert not (bare / ".venv").exists()


def test_a_night_below_its_floor_tells_the_boards_owner_and_exits_for_them(set_up):
    """The stand-in suite measures under its 940 Mbit/s floor: exit 10 (below threshold), and
    the boards' owner, not the lab's, is told; a lab check that finds no env file is the lab's."""
    recipe = _gitlab()
    root = set_up
    _fresh_night(root)
    env = {**_night_env(root, recipe), "FAKE_GOODPUT": "900.0"}
    for told in ("told-lab", "told-boards"):
        (root / told).unlink(missing_ok=True)
    (line,) = recipe["nightly-network"]["script"]
    done = _run(line, root, env)
    assert done.returncode == Exit.BELOW_THRESHOLD, done.stdout[-3000:] + done.stderr[-2000:]
    assert "pinet-ci: exit 10 is for the boards owner: told through PINET_NOTIFY_BOARDS" in done.stdout
    (told,) = (root / "told-boards").read_text(encoding="utf-8").splitlines()
    assert ": exit 10: the night's summary is at the end of the job's log" in told, told
    assert not (root / "told-lab").exists()


def test_setup_installs_only_from_a_source_the_lab_names(built, tmp_path):
    """Nothing named, several named, the old PINET_SPEC, extras without ``lab``: setup stops
    with the reason before a venv is made (a public index is never asked for the name)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the recipe's setup needs Node.js and npm (scripts/setup.sh installs them)")
    wheel = str(built["wheel"])
    refusals = [
        ({}, "no source for pytest-pinet named: set PINET_WHEEL"),
        (
            {"PINET_WHEEL": wheel, "PINET_INDEX_URL": "http://127.0.0.1:9/"},
            "not several: PINET_WHEEL PINET_INDEX_URL",
        ),
        ({"PINET_SPEC": f"{wheel}[lab]"}, "PINET_SPEC is no longer read"),
        (
            {"PINET_WHEEL": wheel, "PINET_EXTRAS": "postgres,charts"},
            "has no lab extra (labgrid, allure-pytest)",
        ),
        ({"PINET_WHEEL": str(tmp_path / "missing.whl")}, "PINET_WHEEL names no file"),
        ({"PINET_WHEELHOUSE": str(tmp_path)}, "no pytest_pinet-*.whl in PINET_WHEELHOUSE"),
    ]
    for n, (named, reason) in enumerate(refusals):
        root = _lab_repository(tmp_path / f"lab-repo-{n}")
        done = _setup(root, named)
        assert done.returncode == Exit.BAD_CONFIG and reason in done.stderr, (
            named,
            done.stdout[-2000:],
            done.stderr,
        )
        assert not (root / ".venv").exists(), named  # known before anything was installed


def _agents(temp: Path) -> set[int]:
    """The ssh-agent processes alive now (a zombie has ended) that a night with ``TMPDIR=temp``
    started: their environment is the night's.  Another test's agents (the rehearsal's nights
    run on the test command's other worker) are not this night's."""
    alive = set()
    mark = f"TMPDIR={temp}".encode()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            environ = (status.parent / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if "Name:\tssh-agent\n" in text and "State:\tZ" not in text and mark in environ:
            alive.add(int(status.parent.name))
    return alive


def test_a_failing_night_leaves_no_agent_and_no_key_copy(tmp_path):
    """The night's ssh-agent and its copy of the key go on every way out: a missing env file
    (after the agent started), a key ssh-add refuses, no store named."""
    recipe = _gitlab()
    root = _lab_repository(tmp_path / "lab-repo")
    env = _night_env(root, recipe)
    (line,) = recipe["nightly-network"]["script"]
    garbage = root / "not-a-key"
    garbage.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
    nights = [
        ({"PINET_ENV": "lab/missing.yaml"}, "no env file lab/missing.yaml"),
        ({"PINET_SSH_KEY": str(garbage)}, "ssh-add refused the key"),
        ({"PINET_DB": ""}, "PINET_DB names no store"),
    ]
    for n, (changed, reason) in enumerate(nights):
        temp = tmp_path / f"tmp-{n}"
        temp.mkdir()
        done = _run(line, root, {**env, **changed, "TMPDIR": str(temp)})
        assert done.returncode == Exit.BAD_CONFIG and reason in done.stderr, (
            changed,
            done.stdout,
            done.stderr,
        )
        assert f": exit 4: {reason}" in (root / "told-lab").read_text(encoding="utf-8"), changed
        assert _agents(temp) == set(), changed  # no agent of this night is left
        assert list(temp.iterdir()) == [], changed  # nor the key's copy


def test_the_jenkinsfile_runs_the_same_steps_and_publishes_the_same_report():
    text = (RECIPES / "Jenkinsfile").read_text(encoding="utf-8")
    gitlab = _gitlab()["nightly-network"]
    steps = re.findall(r"sh '([^']+)'", text)
    assert steps == gitlab["before_script"] + gitlab["script"]  # what the GitLab test ran
    assert "reportDir: 'results/report'" in text and "allowMissing: false" in text
    assert "archiveArtifacts artifacts: 'results/**'" in text
    assert "junit testResults: 'results/junit.xml'" in text
    assert f"PINET_ENV = '{_gitlab()['variables']['PINET_ENV']}'" in text
    # The night's step inside the SSH Agent plugin's step: the lab's key for that step only.
    assert re.search(r"sshagent\(credentials: \['pinet-lab-key'\]\) \{\s*sh 'sh ci/pinet-ci.sh nightly", text)
    assert f"PINET_WHEELHOUSE = '{_gitlab()['variables']['PINET_WHEELHOUSE']}'" in text


def test_the_recipe_installs_the_allure_cli_setup_sh_installs():
    version = re.search(r"ALLURE_VERSION=(\S+)", (RECIPES / "pinet-ci.sh").read_text(encoding="utf-8"))
    assert version is not None
    setup = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert f"ALLURE_VERSION={version.group(1)}\n" in setup and '"allure@$ALLURE_VERSION"' in setup
