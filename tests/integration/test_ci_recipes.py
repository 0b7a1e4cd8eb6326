"""The CI recipes of lab/ci run as written, as far as a machine without a runner allows.

The GitLab job's lines are taken from the YAML and run in a scratch copy of a lab's
repository (ci/pinet-ci.sh, lab/rpi-lab.yaml). ``setup`` runs as written: the wheel built
from this checkout, named with the extras a night needs as the docs tell a lab to name it,
goes into a fresh venv with its dependencies from the package index, and the Allure 3 CLI
into .allure from npm (nothing is linked from this checkout). A night of a small stand-in
suite (fake measurements of lab "bench", no hardware) without the Allure CLI runs in that
repository. The GitLab job's and the GitHub workflow's nights on a lab, with the key and the
pages, are the rehearsal's (test_rehearsal.py). The Jenkinsfile's steps are the same
commands, which the test checks line by line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixture_paths import RECIPES

from ..lab_example import keyed_example

REPO = Path(__file__).resolve().parents[2]
SUITE = (REPO / "tests" / "unit" / "test_allure.py").read_text(encoding="utf-8")
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


def _setup(root: Path, spec: str) -> subprocess.CompletedProcess[str]:
    """The job's ``before_script`` as written, with the lab's wheel as PINET_SPEC."""
    (line,) = _gitlab()["nightly-network"]["before_script"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    # The runner's PATH, without this checkout's venv: setup makes the lab's own.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(REPO) not in p)
    return subprocess.run(
        ["/bin/sh", "-c", line],
        cwd=root,
        env={**env, "PINET_SPEC": spec},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def set_up(built, tmp_path_factory) -> Path:
    """A lab's repository after ``sh ci/pinet-ci.sh setup`` with the lab's wheel and the
    extras the docs name: pytest-pinet and its dependencies in .venv, Allure in .allure."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the recipe's setup needs Node.js and npm (scripts/setup.sh installs them)")
    root = _lab_repository(tmp_path_factory.mktemp("set-up") / "lab-repo")
    done = _setup(root, f"{built['wheel']}[lab,postgres,charts]")
    assert done.returncode == 0, f"setup: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "pinet-ci: pytest-pinet 0.1.0, Node.js v" in done.stdout
    assert (
        not (root / ".venv").is_symlink()
        and (root / ".allure" / "node_modules" / "allure" / "cli.js").exists()
    )
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
    assert published.returncode == 1 and "no report in results/report to publish" in published.stderr
    for line in recipe["pages"]["script"]:
        assert _run(line, root, env).returncode == 1  # no pages from a night without a report
    # setup stops at once when the runner has no Node.js, before anything is installed.
    bare = _lab_repository(tmp_path / "bare-repo")
    no_node = _run("/bin/sh ci/pinet-ci.sh setup", bare, {**env, "PATH": str(tmp_path / "empty-bin")})
    assert no_node.returncode == 1 and "Node.js is missing" in no_node.stderr
    assert not (bare / ".venv").exists()


def test_setup_with_the_package_spec_that_lacks_the_lab_extra_stops_at_once(built, tmp_path):
    """The spec the recipe once had ([postgres,charts]: no labgrid, no allure-pytest) made a
    pinet whose night stopped at its first step; setup now stops, naming the extra."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the recipe's setup needs Node.js and npm (scripts/setup.sh installs them)")
    root = _lab_repository(tmp_path / "lab-repo")
    done = _setup(root, f"{built['wheel']}[postgres,charts]")
    assert done.returncode == 1, done.stdout[-2000:]
    assert (
        "has no lab extra (labgrid, allure-pytest)" in done.stderr and "[lab,postgres,charts]" in done.stderr
    )
    assert not (root / ".venv").exists()  # known from the spec, before anything was installed


def test_the_jenkinsfile_runs_the_same_steps_and_publishes_the_same_report():
    text = (RECIPES / "Jenkinsfile").read_text(encoding="utf-8")
    gitlab = _gitlab()["nightly-network"]
    steps = re.findall(r"sh '([^']+)'", text)
    assert steps == gitlab["before_script"] + gitlab["script"]  # what the GitLab test ran
    assert "reportDir: 'results/report'" in text and "allowMissing: false" in text
    assert "archiveArtifacts artifacts: 'results/**'" in text
    assert "junit testResults: 'results/junit.xml'" in text
    assert f"PINET_ENV = '{_gitlab()['variables']['PINET_ENV']}'" in text


def test_the_recipe_installs_the_allure_cli_setup_sh_installs():
    version = re.search(r"ALLURE_VERSION=(\S+)", (RECIPES / "pinet-ci.sh").read_text(encoding="utf-8"))
    assert version is not None
    setup = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert f"ALLURE_VERSION={version.group(1)}\n" in setup and '"allure@$ALLURE_VERSION"' in setup
