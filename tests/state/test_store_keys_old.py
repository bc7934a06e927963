"""Stores from before API keys: a SQLite file or PostgreSQL schema without ``st_keys``
opens read-only with no keys (nothing written), and gets the table on its first writable
open, sessions untouched."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.fsck import fsck
from claimfsm.state.keys import new_key
from claimfsm.state.sqlite import SQLiteStore
from tests.support.pg import PgServer

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_a_sqlite_file_from_before_keys(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with SQLiteStore(db) as store:
        store.create(make_revision("a", 0, make_state("a")))
    with closing(sqlite3.connect(db)) as conn, conn:  # as the previous release wrote it
        conn.execute("DROP TABLE st_keys")
    before = db.read_bytes()
    with SQLiteStore(db, readonly=True) as view:
        assert list(view.api_keys()) == [] and fsck(view).ok
    assert db.read_bytes() == before
    with SQLiteStore(db) as store:
        row = store.add_key(new_key("ops", "admin", now=NOW)[1])
        assert list(store.api_keys()) == [row] and list(store.sessions()) == ["a"]
    with SQLiteStore(db, readonly=True) as view:
        assert [k.name for k in view.api_keys()] == ["ops"] and fsck(view).ok


def test_a_postgres_schema_from_before_keys(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        store.create(make_revision("a", 0, make_state("a")))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE st_keys")
    with PostgresStore(url, create=False) as view:
        assert list(view.api_keys()) == [] and fsck(view).ok
    with PostgresStore(url) as store:
        row = store.add_key(new_key("ops", "admin", now=NOW)[1])
        assert list(store.api_keys()) == [row] and list(store.sessions()) == ["a"]


def _without_actors(conn: sqlite3.Connection | psycopg.Connection) -> None:  # type: ignore[type-arg]
    # st_keys as the release before key actors wrote it.
    conn.execute("ALTER TABLE st_keys DROP COLUMN created_by")
    conn.execute("ALTER TABLE st_keys DROP COLUMN revoked_by")


def test_sqlite_keys_from_before_their_actors(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with SQLiteStore(db) as store:
        old = store.add_key(new_key("ops", "admin", now=NOW)[1])
    with closing(sqlite3.connect(db)) as conn, conn:
        _without_actors(conn)
    before = db.read_bytes()
    with SQLiteStore(db, readonly=True) as view:
        assert list(view.api_keys()) == [old]
    assert db.read_bytes() == before  # read as it is, nothing written
    with SQLiteStore(db) as store:  # the first writable open adds the columns
        revoked = store.revoke_key("ops", at="2026-11-26T00:00:00Z", actor="lee")
        added = store.add_key(new_key("bot", "read", now=NOW, actor="lee")[1])
    with SQLiteStore(db, readonly=True) as view:
        assert list(view.api_keys()) == [revoked, added] and revoked.revoked_by == "lee"


def test_postgres_keys_from_before_their_actors(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        old = store.add_key(new_key("ops", "admin", now=NOW)[1])
    with psycopg.connect(url, autocommit=True) as conn:
        _without_actors(conn)
    with PostgresStore(url, create=False) as view:
        assert list(view.api_keys()) == [old]
    with PostgresStore(url) as store:
        revoked = store.revoke_key("ops", at="2026-11-26T00:00:00Z", actor="lee")
        assert revoked.revoked_by == "lee" and list(store.api_keys()) == [revoked]
