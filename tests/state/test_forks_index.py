"""The forks index on stores from before it: read-only, a session's forks are found by
reading the heads and nothing is written; the first writable open adds the columns, the
first lookup fills them from the heads once, and from then on forks are read from the
index. An ordinary step writes nothing to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from tests.support.pg import PgServer

WANTED = [{"sid": "f1", "rev": 1, "at": "2026-02-01T00:00:00Z"},
          {"sid": "f2", "rev": 2, "at": "2026-02-02T00:00:00Z"}]


def _rev(sid: str, rev: int) -> Revision:
    state = SessionState(sid=sid, claim=f"claim of {sid}", fsm="PARSE_CLAIM", rounds=rev)
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1,
                    fsm="PARSE_CLAIM", skill=None, envelope=None, state=state,
                    ts=f"2026-01-01T00:00:0{rev}Z")


def _sessions(store: StateStore) -> None:
    for sid in ("src", "plain"):
        store.create(_rev(sid, 0))
        for rev in (1, 2):
            store.commit(_rev(sid, rev), expected_rev=rev - 1)
    for name, at, ts in (("f1", 1, WANTED[0]["at"]), ("f2", 2, WANTED[1]["at"])):
        copy = store.fork("src", at, name)
        store.commit(forked_revision(copy, "src", str(ts)), expected_rev=copy.rev)


def test_an_ordinary_step_writes_nothing_to_the_index(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path) as store:
        _sessions(store)
        assert store.forks("src") == WANTED and store.forks("plain") == []
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT s.sid, c.parent, c.parent_rev, c.forked FROM st_catalog c"
                        " JOIN st_sessions s ON s.id = c.id ORDER BY c.id").fetchall()
    conn.close()
    # No row for "src" or "plain": their commits set no verdict and made no fork.
    assert rows == [("f1", "src", 1, WANTED[0]["at"]), ("f2", "src", 2, WANTED[1]["at"])]


def test_an_old_sqlite_store_is_scanned_read_only_and_filled_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:
        _sessions(store)
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX st_catalog_parent")
    for column in ("parent", "parent_rev", "forked"):
        conn.execute(f"ALTER TABLE st_catalog DROP COLUMN {column}")
    conn.commit()
    conn.close()
    with SQLiteStore(path, readonly=True) as store:  # read-only: from the heads
        assert store.forks("src") == WANTED and store.forks("f1") == []
    conn = sqlite3.connect(path)
    assert "parent" not in [r[1] for r in conn.execute("PRAGMA table_info(st_catalog)")]
    conn.close()
    with SQLiteStore(path) as store:  # a writable open adds the columns
        assert store.forks("src") == WANTED
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT parent, parent_rev FROM st_catalog WHERE parent IS NOT NULL"
                        " ORDER BY id").fetchall()
    meta = conn.execute("SELECT value FROM st_meta WHERE key = 'forks'").fetchall()
    conn.close()
    assert rows == [("src", 1), ("src", 2)] and meta == []


def test_an_old_postgres_database_is_scanned_read_only_and_filled_once(
        pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _sessions(store)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX st_catalog_parent")
        for column in ("parent", "parent_rev", "forked"):
            conn.execute(f"ALTER TABLE st_catalog DROP COLUMN {column}")
    with PostgresStore(url, create=False) as store:  # read-only: from the heads
        assert store.forks("src") == WANTED
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('st_catalog_parent')").fetchone() == (None,)
    with PostgresStore(url) as store:
        assert store.forks("src") == WANTED
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT parent, parent_rev FROM st_catalog WHERE parent IS NOT"
                            " NULL ORDER BY id").fetchall()
        assert rows == [("src", 1), ("src", 2)]
        assert conn.execute("SELECT count(*) FROM st_meta WHERE key = 'forks'"
                            ).fetchone() == (0,)
