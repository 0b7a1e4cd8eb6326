"""The end of a run does not wait for a backlog sampler stuck on a board that stopped
answering: a hung QEMU board's lab fault was held back 12 s by it, for no figure."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from pytest_pinet.traffic.load_watch import BACKLOG_EVERY_S, LoadWatch

BACKLOG = "qdisc pfifo_fast 0: root refcnt 2\n Sent 1000 bytes 10 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 3000b 2p requeues 0\n"


class _Board:
    """Answers its first sample, then hangs until released."""

    name = "qpi"
    platform = SimpleNamespace(name="linux", qdisc_show=lambda interface, stats: ["tc", "-s", "qdisc"])

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()
        self.hanging = threading.Event()  # the second sample has been asked for

    def run_shell(self, script: str, *, timeout: float = 60.0) -> Any:
        self.calls += 1
        if self.calls > 1:
            self.hanging.set()
            self.release.wait(timeout=20)
        return SimpleNamespace(
            ok=True, stdout="@@qdisc:eth0\n" + BACKLOG, command=script, exit_code=0, stderr=""
        )


def test_a_sampler_stuck_on_its_host_is_not_waited_for_and_its_samples_are_kept():
    board = _Board()
    watch = LoadWatch("no probe in this test", board, ("eth0",), "pfifo_fast", 0.0, 5.0)  # type: ignore[arg-type]
    watch.__enter__()
    assert board.hanging.wait(timeout=10)  # one sample answered, the second one hangs
    started = time.monotonic()
    watch.__exit__(None, None, None)
    took = time.monotonic() - started
    try:
        assert board.calls == 2
        assert took < BACKLOG_EVERY_S + 1.5, took  # not the 20 s the stuck sample waits
        use = watch.result()
        assert len(use.backlog) == 1 and use.backlog[0].interface == "eth0"
    finally:
        board.release.set()
    watch._pool.shutdown(wait=True)  # the stuck sample has its late answer now
    assert len(watch.result().backlog) == 1  # the late answer is not taken after the load
