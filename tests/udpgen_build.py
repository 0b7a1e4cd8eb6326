"""Building the UDP generator for the systems a lab's boards run, from this machine.

A board builds the generator itself (``ensure_udpgen``: its own ``cc``), but a change to the
C source must not wait for a FreeBSD or NetBSD board to find out it no longer compiles
there.  Zig's C compiler (the ``ziglang`` wheel) carries the libc headers of FreeBSD 14,
NetBSD 10.1 and glibc, so CI compiles every platform section of the source, warnings as
errors, and runs the aarch64 Linux build (a 64-bit Raspberry Pi OS) under ``qemu-user``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_pinet.errors import MissingToolError, PinetError
from pytest_pinet.traffic.udpgen import SOURCE

FLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-pthread")
# Our name -> zig's target (with the libc version zig links against).
CROSS_TARGETS = {
    "x86_64-freebsd": "x86_64-freebsd.14.0",
    "aarch64-freebsd": "aarch64-freebsd.14.0",
    "x86_64-netbsd": "x86_64-netbsd.10.1",
    "aarch64-netbsd": "aarch64-netbsd.10.1",
    "aarch64-linux": "aarch64-linux-gnu",
}
# Where Debian's libc6-arm64-cross puts the aarch64 loader and libc for qemu-user.
ARM64_SYSROOT = Path("/usr/aarch64-linux-gnu")


class BuildError(PinetError):
    """The generator did not compile for a target; the message names it and the compiler's words."""


@dataclass(frozen=True)
class Built:
    """One compiled generator."""

    target: str
    path: Path
    seconds: float


def zig_cache() -> Path:
    """Zig's cache, kept between runs (a cold build of one target takes seconds, a warm one
    a fraction of one)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pinet" / "zig"


def _compile(target: str, command: list[str], output: Path, env: dict[str, str] | None) -> Built:
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*command, *FLAGS, "-o", str(output), str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise BuildError(f"pinet-udpgen for {target}: the compiler ran over 600 s") from None
    if done.returncode != 0 or not output.exists():
        words = (done.stderr or done.stdout).strip()
        raise BuildError(f"pinet-udpgen does not build for {target}:\n{words[-2000:]}")
    if done.stderr.strip():  # -Werror makes warnings fatal; anything else said is still news
        raise BuildError(f"pinet-udpgen for {target} built with messages:\n{done.stderr.strip()[-2000:]}")
    return Built(target, output, time.monotonic() - started)


def cross_build(target: str, output: Path) -> Built:
    """Compile for one of :data:`CROSS_TARGETS` with zig's C compiler."""
    if target not in CROSS_TARGETS:
        raise ValueError(f"unknown target {target!r}: one of {sorted(CROSS_TARGETS)}")
    if importlib.util.find_spec("ziglang") is None:
        raise MissingToolError(
            "the cross compiler is the ziglang package: pip install 'pytest-pinet[test]' (or ziglang)"
        )
    env = {**os.environ, "ZIG_GLOBAL_CACHE_DIR": str(zig_cache())}
    command = [sys.executable, "-m", "ziglang", "cc", "-target", CROSS_TARGETS[target]]
    return _compile(target, command, output, env)


def native_build(output: Path) -> Built:
    """Compile with this machine's ``cc``, as a board does."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise MissingToolError("no C compiler: apt-get install gcc")
    return _compile("native", [cc], output, None)


def run_arm64(binary: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run an aarch64 Linux build under qemu-user (the loader and libc from the cross sysroot)."""
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        raise MissingToolError("qemu-aarch64 not found: apt-get install qemu-user")
    if not (ARM64_SYSROOT / "lib" / "ld-linux-aarch64.so.1").exists():
        raise MissingToolError(f"no aarch64 libc in {ARM64_SYSROOT}: apt-get install libc6-arm64-cross")
    return subprocess.run(
        [qemu, "-L", str(ARM64_SYSROOT), str(binary), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
