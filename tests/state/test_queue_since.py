"""The review queue's order by when a hold began (``st_timers.since``) on stores whose
timers table is from before that column: read-only, the queue is read from the heads;
the first writable open adds the column and its index, the first queue page fills it
from the holds once, and from then on an edit while waiting keeps a session's place."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.queue import WaitingQuery
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from tests.support.pg import PgServer


def _rev(sid: str, rev: int, ts: str, fsm: str, since: str | None) -> Revision:
    runtime: dict[str, Any] = {}
    if since is not None:
        runtime["hold"] = {"kind": "input", "state": fsm, "input": "ReviewInput",
                           "since": since, "until": None, "on_timeout": None}
    state = SessionState(sid=sid, claim=f"claim of {sid}", fsm=fsm, runtime=runtime)
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=fsm,
                    skill=None, envelope=None, state=state, ts=ts)


def _sessions(store: StateStore) -> None:
    for sid, since, edited in (("a", "2026-01-02T00:00:00+00:00", "2026-01-05T00:00:00+00:00"),
                               ("b", "2026-01-03T00:00:00+00:00", None)):
        store.create(_rev(sid, 0, "2026-01-01T00:00:00+00:00", "PARSE_CLAIM", None))
        store.commit(_rev(sid, 1, since, "REVIEW", since), expected_rev=0)
        if edited:  # edited while it waits: a later head, the same hold
            store.commit(_rev(sid, 2, edited, "REVIEW", since), expected_rev=1)


def _order(store: StateStore) -> list[tuple[str, str]]:
    return [(i.sid, i.since) for i in store.waiting(WaitingQuery()).items]


WANTED = [("a", "2026-01-02T00:00:00.000000"), ("b", "2026-01-03T00:00:00.000000")]


def test_an_old_sqlite_store_gets_the_column_and_keeps_the_order(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:
        _sessions(store)
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX st_timers_queue")
    conn.execute("ALTER TABLE st_timers DROP COLUMN since")
    conn.commit()
    conn.close()
    with SQLiteStore(path, readonly=True) as store:  # read-only: from the heads
        assert _order(store) == WANTED
    conn = sqlite3.connect(path)
    assert "since" not in [r[1] for r in conn.execute("PRAGMA table_info(st_timers)")]
    conn.close()
    with SQLiteStore(path) as store:
        assert _order(store) == WANTED
        assert fsck(store).ok
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT id, since FROM st_timers ORDER BY id").fetchall()
    meta = conn.execute("SELECT value FROM st_meta WHERE key = 'timers'").fetchall()
    conn.close()
    assert [since for _, since in rows] == [since for _, since in WANTED] and meta == []


def test_an_old_postgres_database_gets_the_column_and_keeps_the_order(
        pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _sessions(store)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX st_timers_queue")
        conn.execute("ALTER TABLE st_timers DROP COLUMN since")
    with PostgresStore(url, create=False) as store:  # read-only: from the heads
        assert _order(store) == WANTED
    with PostgresStore(url) as store:
        assert _order(store) == WANTED
        assert all(store.verify_chain(s).ok for s in store.sessions())
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT since FROM st_timers ORDER BY id").fetchall()
        assert [r[0] for r in rows] == [since for _, since in WANTED]
        assert conn.execute("SELECT count(*) FROM st_meta WHERE key = 'timers'"
                            ).fetchone() == (0,)
