"""Integration tests build their own small virtual labs, each module under a name of its own
(tests/unit/test_worker_schedule.py); ``fresh_lab`` is ``pinet9``, shared by the modules that use it."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_pinet.virtlab import virtual_lab
from pytest_pinet.virtlab.topology import LabSpec

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package", autouse=True)
def namespace_board_by_default() -> Iterator[None]:
    """The runs these tests start measure the namespace board alone (``PINET_BOARD=netns``):
    what they prove is the plumbing, places, faults and verdicts, which the QEMU board would
    only make minutes slower.  Tests of the QEMU board say ``--pinet-board qemu`` (a
    command-line option outranks the environment).  Package scope: the variable is gone again
    once the last integration test ends, so the unit tests and the suite after them (one
    pytest process) never see it."""
    with pytest.MonkeyPatch.context() as patch:
        if not os.environ.get("PINET_BOARD"):
            patch.setenv("PINET_BOARD", "netns")
        yield


@pytest.fixture(scope="package", autouse=True)
def child_runs_without_hypothesis() -> Iterator[None]:
    """The pytest processes these tests start (the suite on a lab, some through ``pinet run``
    or ``pinet bisect``) use no hypothesis, and its plugin alone cost each about 1 s of
    start-up on a 2-core machine: a third of an empty run's, paid many times over."""
    with pytest.MonkeyPatch.context() as patch:
        addopts = os.environ.get("PYTEST_ADDOPTS", "")
        if "no:hypothesispytest" not in addopts:
            patch.setenv("PYTEST_ADDOPTS", f"{addopts} -p no:hypothesispytest".strip())
        yield


@pytest.fixture(autouse=True)
def results_store_of_its_own(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's runs keep their history in a store of their own (``PINET_DB``, and the
    data directory under ``XDG_DATA_HOME``), not in the one the whole test command shares
    (the root conftest's): otherwise a test's run was judged against the baselines other
    tests' runs had left under other loads.  CI once called a p99 of 12.7 ms a latency
    regression against three runs of another test at 11.5 ms.  A test that means several
    runs to share a history runs them inside itself."""
    scratch = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("PINET_DB", f"sqlite:///{scratch / 'pinet.sqlite'}")
    monkeypatch.setenv("XDG_DATA_HOME", str(scratch / "data"))


@pytest.fixture(scope="session")
def root_required():
    """The one root check: a test (or fixture of any scope) that builds namespaces, taps or
    users asks for this; the repository's conftest marks every test reaching it ``needs_root``."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, taps, sshd, other users)")


@contextlib.contextmanager
def own_lab(spec: LabSpec, monkeypatch: pytest.MonkeyPatch) -> Iterator[LabSpec]:
    """``spec``'s lab built afresh, its state (and every pinet command's, through
    ``PINET_STATE_DIR``) under the test's own directory; always taken down again."""
    monkeypatch.setenv("PINET_STATE_DIR", str(spec.state_root))
    virtual_lab.down(spec)
    virtual_lab.up(spec)
    try:
        yield spec
    finally:
        virtual_lab.down(spec)


@pytest.fixture
def fresh_lab(root_required, tmp_path):
    """A lab of its own, with state under tmp_path; always torn down."""
    spec = LabSpec(name="pinet9", state_root=tmp_path / "state")
    virtual_lab.down(spec)
    yield spec
    virtual_lab.down(spec)


SUDO_USER, PLAIN_USER = "pinet-sudo", "pinet-plain"
SUDOERS = Path("/etc/sudoers.d/pinet-become-test")


@pytest.fixture
def lab_users(root_required) -> Iterator[None]:
    """Two local users the virtual lab's sshd lets in with the lab key: one with passwordless
    sudo for the network tools, one without sudo; removed afterwards."""
    if shutil.which("sudo") is None:
        pytest.fail("sudo is not installed: scripts/setup.sh installs it")
    tools = [shutil.which(tool) for tool in ("ip", "tc", "sysctl", "ethtool", "tee")]
    try:
        for user in (SUDO_USER, PLAIN_USER):
            subprocess.run(["userdel", user], capture_output=True, check=False)
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", user], check=True)
            # not locked (sshd without PAM refuses a locked account), yet no password to use
            subprocess.run(["usermod", "-p", "*", user], check=True)
        SUDOERS.write_text(f"{SUDO_USER} ALL=(root) NOPASSWD: {', '.join(t for t in tools if t)}\n")
        SUDOERS.chmod(0o440)
        yield
    finally:
        SUDOERS.unlink(missing_ok=True)
        for user in (SUDO_USER, PLAIN_USER):
            subprocess.run(["userdel", user], capture_output=True, check=False)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """The wheel and the sdist of this checkout, built once per session: what a lab installs."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("pytest_pinet-*.whl")
    (sdist,) = out.glob("pytest_pinet-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}
