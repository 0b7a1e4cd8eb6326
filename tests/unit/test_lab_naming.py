"""Every way of naming a lab names the same lab and fails the same way.

``--pinet-lab``, labgrid's ``--lg-env`` and ``LG_ENV``, ``PINET_LAB`` and the ini key
``pinet_lab``: the run header says which lab and which way (a hardware env named through
``LG_ENV`` must never silently become the virtual lab), and a file labgrid could not even read
stops the run with one line naming the way it was named and pytest's usage-error status, never
an INTERNALERROR.  The runs are in-process pytester runs with labgrid's own plugin active, as a
user has it.
"""

from __future__ import annotations

import pytest

from tests.fixture_paths import LAB

pytest_plugins = ["pytester"]

HOSTILE = {
    "missing": None,
    "not-a-mapping": b"targets: 5\n",
    "a-list": b"- a\n- b\n",
    "empty-targets": b"targets: {}\n",
    "binary": bytes(range(256)),
}
WAYS = ["--pinet-lab", "--lg-env", "LG_ENV", "PINET_LAB", "ini option pinet_lab"]


def run_naming(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, way: str, value: str, readable: bool = False
) -> pytest.RunResult:
    """A collect-only run naming the lab ``way``.  labgrid's plugin reads a readable env file
    in its configure and cannot start twice in one process: such runs are subprocesses."""
    for name in ("LG_ENV", "PINET_LAB", "LG_COORDINATOR", "PINET_COORDINATOR"):
        monkeypatch.delenv(name, raising=False)
    args = ["-p", "no:cacheprovider", "--collect-only"]
    if way.startswith("--"):
        args += [way, value]
    elif way.startswith("ini"):
        pytester.makeini(f"[pytest]\npinet_lab = {value}\n")
    else:
        monkeypatch.setenv(way, value)
    return pytester.runpytest_subprocess(*args) if readable else pytester.runpytest(*args)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_file_labgrid_cannot_read_is_one_line_naming_the_way(pytester, monkeypatch, way, kind):
    pytester.makepyfile("def test_plain():\n    pass\n")
    content = HOSTILE[kind]
    if content is not None:
        (pytester.path / "lab.yaml").write_bytes(content)
    result = run_naming(pytester, monkeypatch, way, "lab.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"ERROR: {way}: "), errors[0]
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    expected = {
        "missing": "lab env file 'lab.yaml' does not exist",
        "not-a-mapping": "'targets' is missing or empty",
        "a-list": "expected a mapping with 'targets', got list",
        "empty-targets": "'targets' is missing or empty",
        "binary": "not UTF-8 text",
    }[kind]
    assert expected in errors[0]


def test_with_no_lab_named_the_header_says_so(pytester, monkeypatch):
    for name in ("LG_ENV", "PINET_LAB", "PINET_BOARD"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile("def test_uses(pinet_settings):\n    pass\n")
    result = pytester.runpytest("-p", "no:labgrid", "-p", "no:cacheprovider", "--collect-only")
    result.stdout.fnmatch_lines(
        [
            "pinet: lab virtual (two-board lab pinet: namespace board pi and QEMU board qpi, built on demand; no lab named)"
        ]
    )


def test_two_ways_naming_two_labs_is_an_error_naming_both(pytester, monkeypatch):
    for name in ("known_hosts.example", "id_ed25519.example", "rpi-lab.yaml"):
        (pytester.path / name).write_bytes((LAB / name).read_bytes())
    (pytester.path / "other.yaml").write_bytes((LAB / "rpi-lab.yaml").read_bytes())
    monkeypatch.setenv("LG_ENV", "other.yaml")
    monkeypatch.setenv("PINET_LAB", "rpi-lab.yaml")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: PINET_LAB 'rpi-lab.yaml' and LG_ENV 'other.yaml': two names*"])
