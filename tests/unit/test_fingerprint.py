"""What changed on a red context's path: fingerprints of the facts each night keeps, their
differences in `pinet regressions` and the morning page, and known issues named against them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_pinet.cli.main import main
from pytest_pinet.exit_codes import Exit
from pytest_pinet.host.facts_parse import (
    parse_ethtool_rings,
    parse_root_qdisc,
    parse_sysctls,
    parse_vc_version,
)
from pytest_pinet.model.fingerprint import NOTHING_CHANGED, differences, fingerprint, what_changed
from pytest_pinet.model.host_facts import HostFacts, InterfaceFacts
from pytest_pinet.record.night_digest import night_digest_of
from pytest_pinet.record.store import ResultsStore

from ..fixture_paths import LAB_OUTPUTS
from .test_store import BOARD, _measurement

DAY = 86400.0


def test_the_path_facts_parse_from_real_outputs():
    assert parse_ethtool_rings((LAB_OUTPUTS / "virtio-ethtool-g.txt").read_text()) == {"rx": 256, "tx": 256}
    assert parse_ethtool_rings("netlink error: Operation not supported\n") == {}
    assert parse_root_qdisc((LAB_OUTPUTS / "virtio-tc-qdisc-show.txt").read_text()) == "pfifo_fast"
    assert parse_root_qdisc("qdisc mq 0: root\nqdisc fq_codel 0: parent :1 limit 10240p\n") == "mq"
    sysctls = parse_sysctls((LAB_OUTPUTS / "host-sysctl-path.txt").read_text())
    assert sysctls["net.ipv4.tcp_rmem"] == "4096 131072 33554432"  # tabs made single spaces
    assert len(sysctls) == 12 and all(" = " not in v for v in sysctls.values())
    # A Pi's firmware and EEPROM bootloader, as other people's Pis printed them.
    assert (
        parse_vc_version(
            (LAB_OUTPUTS / "rpi4_vcgencmd-bootloader_version__ironsheep-issue-91.txt").read_text()
        )
        == "8ba17717fbce (2023/01/11 17:40:52)"
    )
    assert (
        parse_vc_version(
            (LAB_OUTPUTS / "rpi5_vcgencmd-bootloader_version__rpi-eeprom-pr-850.txt").read_text()
        )
        == "086b83e3332d (2026/05/26 16:01:25)"
    )
    assert (
        parse_vc_version((LAB_OUTPUTS / "rpi3_vcgencmd-version__ev3dev-issue-824.txt").read_text())
        == "c844c61ad08f (Oct  4 2016 18:59:20)"
    )
    assert parse_vc_version("VCHI initialization failed\n") == ""
    assert parse_vc_version("") == ""


def _facts(**changes: object) -> dict[str, dict[str, Any]]:
    """The stored form of a board's facts (as the results file and the store keep them)."""
    eth0 = dataclasses.replace(
        BOARD.interfaces["eth0"], offloads={"gro": True, "tso": True}, rings={"rx": 1024}, carrier=True
    )
    board = dataclasses.replace(
        BOARD,
        interfaces={"eth0": eth0},
        temperature_c=51.2,
        cpu_mhz=1800.0,
        sysctls={"net.core.rmem_max": "212992"},
    )
    data = dataclasses.asdict(board)
    for path, value in changes.items():
        where = data
        *parents, last = path.split("__")
        for part in parents:
            where = where[part]
        where[last] = value
    return {"board": data}


def test_a_fingerprint_keeps_settings_and_leaves_readings_and_unknowns_out():
    flat = fingerprint(_facts())
    assert flat["board eth0 offloads gro"] == "on" and flat["board eth0 rings rx"] == "1024"
    assert flat["board kernel"] == "6.1.0" and flat["board sysctls net.core.rmem_max"] == "212992"
    assert flat["board eth0 firmware"] == "fw1" and flat["board eth0 driver"] == "r8152"
    # The clock, the temperature and the carrier are readings; None is unknown, not a value.
    assert not any(k.endswith(("temperature_c", "cpu_mhz", "carrier", "governor")) for k in flat)
    warmer = fingerprint(_facts(temperature_c=70.0, cpu_mhz=600.0))
    assert differences(flat, warmer) == []
    assert what_changed(flat, warmer) == [NOTHING_CHANGED]


def test_what_changed_names_each_difference_and_what_one_night_did_not_record():
    before = fingerprint(_facts())
    after = fingerprint(_facts(interfaces__eth0__offloads={"gro": False, "tso": True}, kernel="6.6.0"))
    assert differences(before, after) == [
        "board eth0 offloads gro: on -> off",
        "board kernel: 6.1.0 -> 6.6.0",
    ]
    older = {k: v for k, v in before.items() if "rings" not in k}  # an older pinet kept no rings
    assert differences(older, before) == ["board eth0 rings rx: not recorded -> 1024"]
    assert what_changed({}, after) == ["no fingerprint of the last good night to compare"]
    assert what_changed(before, None) == ["no fingerprint of the red night to compare"]


def _night(store: ResultsStore, run: str, day: int, figure: float, facts: Mapping[str, Any] | None) -> None:
    store.add_run(run, "pinet", "0.1.0")
    measured = _measurement(figure, started=1_700_000_000 + day * DAY)
    if facts is not None:
        board = facts["board"]
        assert isinstance(board, dict)
        measured = dataclasses.replace(measured, facts={"board": _host(board)})
    row = store.add(run, measured, "0.1.0")
    store.set_verdict(row, "regression" if figure < 930 else "pass", "")


def _host(data: Mapping[str, Any]) -> HostFacts:
    interfaces = data["interfaces"]
    assert isinstance(interfaces, dict)
    fields = {**data, "interfaces": {n: InterfaceFacts(**i) for n, i in interfaces.items()}}
    return HostFacts(**fields)


@pytest.fixture
def red_store(tmp_path):
    """Three good nights, then two red ones whose board turned GRO off on the first."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultsStore(url)
    for n, figure in enumerate((941.4, 941.5, 941.3), 1):
        _night(store, f"n{n}", n, figure, _facts())
    gro_off = _facts(interfaces__eth0__offloads={"gro": False, "tso": True})
    _night(store, "n4", 4, 912.8, gro_off)
    _night(store, "n5", 5, 913.1, gro_off)
    store.close()
    return url


def test_a_red_context_names_what_changed_since_its_last_good_night(red_store, capsys):
    assert main(["regressions", "--db", red_store]) == Exit.REGRESSION
    listed = capsys.readouterr().out
    assert "what changed: since run n3: board eth0 offloads gro: on -> off" in listed, listed
    assert main(["regressions", "--db", red_store, "--json"]) == Exit.REGRESSION
    (entry,) = json.loads(capsys.readouterr().out)["regressions"]
    assert entry["what_changed"] == ["since run n3: board eth0 offloads gro: on -> off"]
    assert entry["known"] == []
    # The morning page of the second red night: the persisting regression, with what changed.
    store = ResultsStore(red_store)
    digest = night_digest_of(store, "n5", [])
    store.close()
    (persisting,) = digest.persisting
    assert "what changed: since run n3: board eth0 offloads gro: on -> off" in persisting.line()
    assert "board eth0 offloads gro: on -> off" in digest.markdown()


def test_a_known_issue_is_shown_beside_the_contexts_whose_change_it_names(red_store, capsys):
    assert main(["known", "add", "--change", "offloads gro", "--db", red_store]) == 2  # no --why
    assert "--why" in capsys.readouterr().err
    added = main(
        ["known", "add", "--change", "eth0 offloads gro", "--why", "image 2026-11 turns GRO off", "--who", "al",
         "--db", red_store]
    )  # fmt: skip
    assert added == 0 and "known issue #1" in capsys.readouterr().out
    assert main(["known", "add", "--change", "kernel", "--why", "not this one", "--db", red_store]) == 0
    capsys.readouterr()
    assert main(["regressions", "--db", red_store]) == Exit.REGRESSION
    listed = capsys.readouterr().out
    assert 'known: #1 "eth0 offloads gro": image 2026-11 turns GRO off (al)' in listed
    assert "#2" not in listed  # the kernel did not change: that issue names nothing here
    assert main(["known", "--db", red_store]) == 0
    assert "2 known issue(s)" in capsys.readouterr().out
    assert main(["known", "remove", "1", "--db", red_store]) == 0
    assert main(["known", "remove", "1", "--db", red_store]) == 2
    assert "no open known issue #1" in capsys.readouterr().err
    assert main(["regressions", "--db", red_store]) == Exit.REGRESSION
    assert "known:" not in capsys.readouterr().out


def test_a_red_context_whose_path_did_not_change_says_so(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    store = ResultsStore(url)
    for n, figure in enumerate((941.4, 941.5, 941.3, 912.8), 1):
        _night(store, f"n{n}", n, figure, _facts())
    store.close()
    assert main(["regressions", "--db", url]) == Exit.REGRESSION
    assert f"what changed: since run n3: {NOTHING_CHANGED}" in capsys.readouterr().out
