"""A throwaway PostgreSQL cluster for the test session (a pytest plugin module).

``initdb --no-sync`` into a temp dir, ``pg_ctl start`` on a free port with the unix socket
in that dir, stopped in a finaliser. The server runs as the ``postgres`` OS user when the
tests run as root (PostgreSQL refuses to run as root). Each test gets a fresh schema:
the ``pg_url`` fixture's URL sets ``search_path`` to it, so stores opened on that URL see
empty tables. Missing binaries -> :func:`tests.support.components.missing`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.components import missing

__all__ = ["PgServer", "pg_server", "pg_url"]


@dataclass
class PgServer:
    """A running cluster: its base URL (database ``postgres``) and how to stop it."""

    url: str
    port: int
    data: Path
    bindir: Path
    user: str | None

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    def new_schema(self) -> str:
        """A fresh schema; the returned URL makes it the first on ``search_path``."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.url}&options=-csearch_path%3D{name}"


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server() -> PgServer:
    """Start a cluster (raises ``RuntimeError`` with the server's own words if it fails)."""
    bindir = _bindir()
    if bindir is None:
        raise FileNotFoundError("pg_ctl not found (apt-get install postgresql)")
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise FileNotFoundError("running as root and no 'postgres' OS user") from exc
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="claimfsm-pg-"))
    data = root / "data"
    if user is not None:
        shutil.chown(root, user)
    port = _free_port()
    server = PgServer(f"postgresql://{pwd.getpwuid(os.geteuid()).pw_name if user is None else user}"
                      f"@127.0.0.1:{port}/postgres?sslmode=disable", port, data, bindir, user)
    done = server.run("initdb", "--no-sync", "-A", "trust", "-U", user or
                      pwd.getpwuid(os.geteuid()).pw_name, "-D", str(data))
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr.strip()}")
    opts = (f"-k {root} -p {port} -c listen_addresses=127.0.0.1 -c max_connections=200"
            " -c shared_buffers=64MB")
    done = server.run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(root / "log"),
                      "-w", "-t", "60", "start")
    if done.returncode != 0:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log[-500:]}")
    return server


def stop_server(server: PgServer) -> None:
    """Stop the cluster fast and remove its files."""
    server.run("pg_ctl", "-D", str(server.data), "-m", "immediate", "-w", "stop")
    shutil.rmtree(server.data.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One cluster for the whole test session."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("PostgreSQL", "psycopg is not installed (pip install -e '.[postgres]')")
    try:
        server = start_server()
    except (FileNotFoundError, RuntimeError) as exc:
        missing("PostgreSQL", str(exc))
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A URL whose ``search_path`` is a fresh, empty schema."""
    return pg_server.new_schema()


if __name__ == "__main__":
    # ``python -m tests.support.pg CMD...``: run CMD with CLAIMFSM_PG_URL naming a throwaway
    # cluster (``make bench-batch``); without PostgreSQL, CMD runs without the variable.
    import sys

    try:
        running: PgServer | None = start_server()
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"no PostgreSQL ({exc}): PostgreSQL cases left out", file=sys.stderr)
        running = None
    env = dict(os.environ)
    if running is not None:
        env["CLAIMFSM_PG_URL"] = running.url
    try:
        code = subprocess.call(sys.argv[1:], env=env)
    finally:
        if running is not None:
            stop_server(running)
    sys.exit(code)
