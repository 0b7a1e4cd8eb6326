"""The progress line: updated in place on a terminal and cleared at the end, plain lines
every few seconds in a CI log."""

from __future__ import annotations

import contextlib

from pytest_pinet.plugin.progress_line import TerminalProgress


class Reporter:
    def __init__(self, isatty: bool) -> None:
        self.isatty = isatty
        self.out: list[str] = []

    def write(self, text: str, flush: bool = False) -> None:
        self.out.append(text)

    def write_line(self, text: str) -> None:
        self.out.append(text + "\n")


class Capture:
    @contextlib.contextmanager
    def global_and_fixture_disabled(self):
        yield


def test_a_terminal_gets_one_updating_line_cleared_at_the_end():
    reporter = Reporter(isatty=True)
    progress = TerminalProgress(reporter, Capture(), "test_x")
    progress("board->peer", 1.0, 22.0, (), False)
    progress("board->peer", 6.2, 22.0, (941.26,), False)
    progress("board->peer", 7.0, 22.0, (), True)
    assert reporter.out[0] == "\rpinet: test_x board->peer: 1 of at most 22 s"
    assert reporter.out[1] == "\rpinet: test_x board->peer: 6 of at most 22 s, 941.3 Mbit/s"
    last = reporter.out[2]
    assert last.startswith("\r") and last.endswith("\r") and not last.strip()
    assert len(last) == 2 + len(reporter.out[1]) - 1  # the longest line, blanked
    assert not any("\n" in text for text in reporter.out)


def test_a_log_gets_a_plain_line_every_five_seconds():
    reporter = Reporter(isatty=False)
    progress = TerminalProgress(reporter, Capture(), "test_x")
    for second in range(12):
        progress("full duplex", float(second), 22.0, (940.0, 938.5), False)
    progress("full duplex", 12.0, 22.0, (), True)
    assert reporter.out == [
        "pinet: test_x full duplex: 0 of at most 22 s, 940.0 / 938.5 Mbit/s\n",
        "pinet: test_x full duplex: 5 of at most 22 s, 940.0 / 938.5 Mbit/s\n",
        "pinet: test_x full duplex: 10 of at most 22 s, 940.0 / 938.5 Mbit/s\n",
    ]
