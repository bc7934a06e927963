"""A database's own errors reach callers as store codes, raised by the store itself (no
caller catches ``sqlite3.Error`` or ``psycopg.Error``): a damaged SQLite file, a table
gone from under a running store (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
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
        with sqlite3.connect(path) as other:
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

