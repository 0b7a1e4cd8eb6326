"""The main job's summary says which tests were measured again: a night counted one
"below threshold" (the first attempt of the QEMU board's SFQ download, Jain 0.949 against
0.950) and still exited 0, since the test's verdict is its last attempt's."""

from __future__ import annotations

import json

from pytest_pinet.cli.run import remeasured_tests


def test_remeasured_tests_are_named_once_and_a_torn_line_is_skipped(tmp_path):
    facts = [
        {"kind": "boot", "test_id": ""},
        {
            "kind": "remeasured",
            "test_id": "pytest_pinet/suite/test_routing.py::test_download_through_the_board[board-qpi-sfq]",
        },
        {
            "kind": "remeasured",
            "test_id": "pytest_pinet/suite/test_routing.py::test_download_through_the_board[board-qpi-sfq]",
        },
    ]
    text = "\n".join(json.dumps(f) for f in facts) + '\n{"kind": "remeas'
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "facts.jsonl").write_text(text)
    assert remeasured_tests(tmp_path, "run1") == ["test_download_through_the_board[board-qpi-sfq]"]
    assert remeasured_tests(tmp_path, "missing") == []
