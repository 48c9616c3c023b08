"""A PostgreSQL server from Debian's `postgresql` package, started for the tests.

It runs as the `postgres` user (the server refuses root) on a Unix socket in a temporary
folder, with trust authentication and no TCP port, and is stopped at the end of the session.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PORT = 5439
USER = "gmxbench"


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_server_user(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


@contextmanager
def server() -> Iterator[str]:
    """Start a server; yields the URL of its maintenance database."""
    bindir = server_bin()
    assert bindir is not None, "PostgreSQL is not installed (.ci/setup-tests installs it)"
    top = Path(tempfile.mkdtemp(prefix="gmxbench-pg-"))
    data, sock = top / "data", top / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        top.chmod(0o755)
        shutil.chown(top, "postgres")
        shutil.chown(sock, "postgres")
    run = lambda *args: subprocess.run(  # noqa: E731
        _as_server_user([str(bindir / args[0]), *args[1:]]),
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    run("initdb", "-D", str(data), "-A", "trust", "-U", USER, "--no-sync")
    options = f"-k {sock} -c listen_addresses='' -p {PORT} -c fsync=off"
    run("pg_ctl", "-D", str(data), "-o", options, "-l", str(top / "server.log"), "-w", "start")
    try:
        yield f"postgresql://{USER}@/postgres?host={sock}&port={PORT}"
    finally:
        subprocess.run(
            _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(top, ignore_errors=True)


def new_database(server_url: str) -> str:
    """A fresh, empty database on the server; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.replace("/postgres?", f"/{name}?")
