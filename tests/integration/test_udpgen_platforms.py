"""The generator's C source compiles for every platform a lab runs, and the aarch64 Linux
build (a 64-bit Raspberry Pi OS) sends real datagrams under qemu-user.

The FreeBSD and NetBSD builds are compiled and linked here, warnings as errors; only a real
board runs their BPF path (docs/bsd-boards.md says what is verified where).
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from pytest_pinet.traffic.udpgen import parse_udpgen

from ..udpgen_build import CROSS_TARGETS, BuildError, cross_build, native_build, run_arm64

pytest.importorskip("ziglang", reason="the cross compiler comes with the test extra (ziglang)")

ELF_OS = {"freebsd": "FreeBSD 14.0", "netbsd": "NetBSD 10.1", "linux": "GNU/Linux"}
ELF_ARCH = {"x86_64": "x86-64", "aarch64": "ARM aarch64"}


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("udpgen")
    made = {"native": native_build(out / "native").path}
    for target in CROSS_TARGETS:
        made[target] = cross_build(target, out / target).path
    return made


@pytest.mark.parametrize("target", [*CROSS_TARGETS, "native"])
def test_the_generator_builds_for_each_platform_without_warnings(builds, target):
    described = subprocess.run(["file", "-b", str(builds[target])], capture_output=True, text=True).stdout
    assert described.startswith("ELF 64-bit")
    if target != "native":
        arch, system = target.split("-")
        assert ELF_ARCH[arch] in described
        assert f"for {ELF_OS[system]}" in described


def test_a_build_failure_names_the_target_and_the_compiler_message(tmp_path, monkeypatch):
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { int unused; return 0; }\n")
    monkeypatch.setattr("tests.udpgen_build.SOURCE", broken)
    with pytest.raises(BuildError, match=r"(?s)does not build for aarch64-netbsd:.*unused variable 'unused'"):
        cross_build("aarch64-netbsd", tmp_path / "out")


def test_the_arm64_linux_build_sends_over_loopback_under_qemu(builds):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        port = receiver.getsockname()[1]
        done = run_arm64(
            builds["aarch64-linux"],
            ["--mode", "sendmmsg", "--dest", "127.0.0.1", "--port", str(port), "--duration", "2"],
            timeout=60,
        )
        receiver.setblocking(False)
        arrived = 0
        try:
            while True:
                receiver.recv(2048)
                arrived += 1
        except BlockingIOError:
            pass
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["event"] == "start" and events[0]["mode"] == "sendmmsg" and events[0]["port"] == port
    run = parse_udpgen(done.stdout, "aarch64 pinet-udpgen under qemu-user")
    # Every interval line counts datagrams the kernel took; the receiver saw some of them
    # (its buffer holds the rest of the run at most).
    assert run.packets > 1000 and run.bytes == run.packets * 1472
    assert 0 < arrived <= run.packets
    assert len(run.intervals) >= 1 and run.seconds == pytest.approx(2.0, abs=0.5)
