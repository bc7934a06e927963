"""A database's own errors reach callers as store codes, raised by the store itself (no
caller catches ``sqlite3.Error`` or ``psycopg.Error``): a damaged SQLite file, a table
gone from under a running store (SQLite and PostgreSQL), a full or read-only disk or
server (``STORE_FULL``, ``STORE_READ_ONLY``)."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import pytest

from claimfsm.state.contract import make_revision
from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.probe import NotADatabase, StoreIOError
from tests.support.pg import PgServer


def _one_session(path: Path,
                 durability: Literal["full", "normal", "group"] = "normal") -> SQLiteStore:
    store = SQLiteStore(path, durability=durability)
    store.create(make_revision("s1", 0))
    return store


def test_a_damaged_file_is_refused_by_the_store_itself(tmp_path: Path) -> None:
    path = tmp_path / "st.db"
    _one_session(path).close()
    raw = path.read_bytes()
    path.write_bytes(raw[:100] + b"\xff" * (len(raw) - 100))  # the header survives
    with pytest.raises(NotADatabase) as info:
        SQLiteStore(path)
    assert (info.value.code, info.value.field) == ("STORE_NOT_DATABASE", "db")
    assert str(info.value).startswith(f"--db: {path}: damaged or not a SQLite database")
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)


@pytest.mark.parametrize("durability", ["normal", "group"])
def test_a_table_gone_under_a_running_store_is_a_store_code(
        tmp_path: Path, durability: Literal["normal", "group"]) -> None:
    path = tmp_path / "st.db"
    store = _one_session(path, durability=durability)
    try:
        store.clear_cache()
        with closing(sqlite3.connect(path)) as other, other:
            other.execute("DROP TABLE st_revisions")
        with pytest.raises(StoreIOError) as read:
            store.head("s1")
        with pytest.raises(StoreIOError) as write:
            store.create(make_revision("s2", 0))
    finally:
        store.close()
    for info in (read, write):
        assert (info.value.code, info.value.field) == ("STORE_IO", "db")
        assert str(info.value) == f"--db: {path}: no such table: st_revisions"
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)


def test_a_server_error_is_a_store_code(pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        store.create(make_revision("s1", 0))
        store.clear_cache()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP TABLE st_revisions")
        with pytest.raises(StoreError) as info:
            store.get("s1", 0)
    assert info.value.code == "STORE_ERROR" and "st_revisions" in info.value.msg
    assert isinstance(info.value.__cause__, psycopg.Error)



def _sqlite_error(text: str, code: int) -> sqlite3.Error:
    exc = sqlite3.OperationalError(text)
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]  # as SQLite's own errors carry
    return exc


@pytest.mark.parametrize("text,code,disk,expected", [
    ("database or disk is full", 13, None, "STORE_FULL"),            # SQLITE_FULL: ENOSPC
    ("attempt to write a readonly database", 8, None, "STORE_READ_ONLY"),
    ("attempt to write a readonly database", 1032, None, "STORE_READ_ONLY"),  # READONLY_*
    ("disk I/O error", 778, "full", "STORE_FULL"),       # IOERR_WRITE: a quota (EDQUOT)
    ("disk I/O error", 4874, "full", "STORE_FULL"),      # IOERR_SHMSIZE on a full disk
    ("disk I/O error", 778, "read-only", "STORE_READ_ONLY"),
    ("disk I/O error", 778, None, "STORE_IO"),           # a failing disk, with room left
    ("unable to open database file", 14, "full", "STORE_FULL"),  # no inode left
    ("database disk image is malformed", 11, None, "STORE_NOT_DATABASE"),
    ("file is not a database", 26, None, "STORE_NOT_DATABASE"),
    ("no such table: st_blobs", 1, "full", "STORE_IO"),  # not a disk condition at all
])
def test_sqlite_failures_are_the_store_codes_of_the_disk_condition(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, code: int,
        disk: str | None, expected: str) -> None:
    from claimfsm._base import sqlite as mapping

    monkeypatch.setattr(mapping, "disk_state", lambda path: disk)
    found, msg = mapping.sqlite_failure(_sqlite_error(text, code), tmp_path / "s.db")
    assert found == expected and str(tmp_path / "s.db") in msg


def test_os_errors_beside_the_store_are_disk_codes(tmp_path: Path) -> None:
    import errno

    from claimfsm._base.sqlite import os_failure

    for number, expected in [(errno.ENOSPC, "STORE_FULL"), (errno.EDQUOT, "STORE_FULL"),
                             (errno.EROFS, "STORE_READ_ONLY"), (errno.EACCES, "STORE_IO")]:
        code, msg = os_failure(OSError(number, os.strerror(number)), tmp_path / "s.db")
        assert code == expected and os.strerror(number) in msg


def test_the_disk_state_comes_from_the_file_system(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    from claimfsm._base import sqlite as mapping

    real = os.statvfs(tmp_path)

    def fake(**changes: int) -> None:
        values = {name: getattr(real, name) for name in (
            "f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
            "f_favail", "f_flag", "f_namemax")}
        values.update(changes)
        monkeypatch.setattr(mapping.os, "statvfs", lambda path: SimpleNamespace(**values))

    fake(f_bfree=0, f_bavail=0)
    assert mapping.disk_state(tmp_path / "s.db") == "full"
    fake(f_favail=0)
    assert mapping.disk_state(tmp_path / "s.db") == "full"  # no inode for a -wal
    fake(f_flag=real.f_flag | os.ST_RDONLY)
    assert mapping.disk_state(tmp_path / "s.db") == "read-only"
    fake(f_bfree=1 << 30, f_bavail=1 << 30, f_frsize=4096, f_favail=1000, f_files=1000)
    assert mapping.disk_state(tmp_path / "s.db") is None


@pytest.mark.parametrize("error,expected", [("DiskFull", "STORE_FULL"),
                                            ("ReadOnlySqlTransaction", "STORE_READ_ONLY")])
def test_a_full_or_read_only_postgresql_server_is_a_disk_code(error: str,
                                                               expected: str) -> None:
    # SQLSTATE 53100 (disk full) used to read as STORE_UNAVAILABLE, as if the server
    # could not be reached.
    from psycopg import errors as pg_errors

    from claimfsm.state.postgres.db import retrying

    def fail() -> None:
        raise getattr(pg_errors, error)("could not extend file: No space left on device")

    with pytest.raises(StoreError) as info:
        retrying(fail)
    assert (info.value.code, info.value.field) == (expected, "db")
