"""The plugin in pytest processes of its own: xdist's workers, and labgrid's own plugin, which
reads the lab file named to it in its configure and cannot start twice in one process.  The
unit tier's modules of the same subjects run everything else in-process; these share their
test sources."""

from __future__ import annotations

import pytest

from tests.fixture_paths import LAB
from tests.unit import test_features, test_lab_naming, test_never_green, test_plugin

pytest_plugins = ["pytester"]


def test_under_xdist_one_measurement_is_enough_and_the_rest_are_listed(pytester):
    test_never_green.one_measurement_is_enough(pytester, "-n", "2")


def test_labgrid_skips_only_what_the_lab_lacks_and_the_night_counts_it(pytester, monkeypatch):
    # labgrid's own plugin reads LG_ENV (a subprocess: it cannot start twice in one process).
    for name in ("known_hosts.example", "id_ed25519.example", "rpi-lab.yaml"):
        (pytester.path / name).write_bytes((LAB / name).read_bytes())
    monkeypatch.setenv("LG_ENV", "rpi-lab.yaml")
    monkeypatch.delenv("PINET_LAB", raising=False)
    pytester.makepyfile(test_night=test_features.MEASURES)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-rs",
        "--pinet-results",
        "r",
        "--pinet-db",
        f"sqlite:///{pytester.path / 's.db'}",
    )
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"pinet: lab {pytester.path / 'rpi-lab.yaml'} (from LG_ENV)",
            "*measured 1 of 2 planned tests (1 measurement)",
            "*not measured: test_night.py::test_the_lab_has_no_can_bus: skipped: unsupported feature(s): can-bus",
        ]
    )
    # pinet's test on the lab's disk ran; a stranger's test keeps labgrid's verdict
    assert "test_night.py::test_the_lab_has_a_disk" not in out.split("short test summary")[-1], out
    assert [line for line in out.splitlines() if line.endswith("unsupported feature(s): usb-disk")] == [
        "SKIPPED [1] test_night.py:20: unsupported feature(s): usb-disk"
    ], out
    assert result.ret == 0, out


@pytest.mark.parametrize("way", test_lab_naming.WAYS)
def test_the_header_names_the_lab_and_the_way_it_was_named(pytester, monkeypatch, way):
    for name in ("known_hosts.example", "id_ed25519.example", "rpi-lab.yaml"):
        (pytester.path / name).write_bytes((LAB / name).read_bytes())
    pytester.makepyfile("def test_uses(pinet_settings):\n    pass\n")
    result = test_lab_naming.run_naming(pytester, monkeypatch, way, "rpi-lab.yaml", readable=True)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"pinet: lab {pytester.path / 'rpi-lab.yaml'} (from {way})"])


def test_markers_are_not_registered_where_pinet_is_not_used(pytester):
    # --strict-markers in a project that does not use pinet still catches its own typo.  A
    # process of its own: in-process runs share sys.modules with every earlier test of this
    # worker, and the claim is about a project's fresh pytest start.
    result = pytester.runpytest_subprocess("--markers")
    for marker in test_plugin.SUITE_MARKERS:
        assert f"@pytest.mark.{marker}:" not in result.stdout.str()
    pytester.makepyfile("import pytest\n\n@pytest.mark.storage\ndef test_typo():\n    pass\n")
    result = pytester.runpytest_subprocess("--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'storage' not found in `markers` configuration option*"])
