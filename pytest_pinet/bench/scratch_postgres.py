"""A throwaway PostgreSQL server on loopback, for the history benchmark and the store's tests.

It is a real server (initdb, postgres) of whatever version the machine has, run as the
``postgres`` user in a directory of its own, listening on 127.0.0.1 only, with trust
authentication for its one user; stopping it removes everything it wrote.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import PinetError
from ..polling import wait_until


def postgres_bin() -> Path | None:
    """The directory of a PostgreSQL server's initdb and postgres, whatever its version: Debian
    keeps each major version apart (/usr/lib/postgresql/N/bin, newest wins), other systems put
    them on PATH."""
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if versions:
        return versions[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def why_not() -> str | None:
    """Why no throwaway server can run here (None: it can)."""
    if postgres_bin() is None:
        return "no PostgreSQL server here (initdb, any version: apt-get install postgresql)"
    if shutil.which("runuser") is None or os.geteuid() != 0:
        return "a throwaway PostgreSQL server runs as the postgres user: it needs root (runuser)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def scratch_postgres() -> Iterator[str]:
    """Run a server until the block ends; yield its URL (user ``pinet``, database ``postgres``)."""
    reason = why_not()
    binaries = postgres_bin()
    if reason is not None or binaries is None:
        raise PinetError(reason or "no PostgreSQL server here")
    import psycopg

    # Not under a private temporary directory of root's: the server runs as postgres.
    home = Path(tempfile.mkdtemp(prefix="pinet-pg-"))
    data = home / "pg"
    data.mkdir()
    shutil.chown(home, "postgres")
    shutil.chown(data, "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [*as_pg, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "pinet"],
            check=True,
            capture_output=True,
        )
        port = _free_port()
        command = [*as_pg, str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-k", str(home)]
        server = subprocess.Popen(
            [*command, "-c", "listen_addresses=127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"postgresql://pinet:secret@127.0.0.1:{port}/postgres"

        def accepts_logins() -> bool:
            try:
                psycopg.connect(url, connect_timeout=2).close()
            except psycopg.OperationalError:
                return False
            return True

        wait_until(
            accepts_logins, timeout=30, pace=0.1, on_timeout=lambda: PinetError("PostgreSQL did not start")
        )
        yield url
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)
