"""A page of history reads the rows from the nearest snapshot at or below its first
revision through its last, and no row before them: a damaged row early in a session does
not stop a later page from reading (while the whole history refuses), and a chain written
under another snapshot policy pages the same."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.sqlite.db import CorruptStore
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from tests.support.pg import PgServer


def _grow(store: StateStore, sid: str, n: int) -> None:
    state = make_state(sid)
    store.create(make_revision(sid, 0, state))
    for rev in range(1, n + 1):
        state = state.model_copy(update={"rounds": rev, "steps": [*state.steps, {"n": rev}]})
        store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)


def test_a_page_never_reads_the_rows_before_its_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with SQLiteStore(db, snapshot_every=8) as store:
        _grow(store, "s", 100)
    with closing(sqlite3.connect(db)) as conn, conn:
        (session,) = conn.execute("SELECT id FROM st_sessions WHERE sid = 's'").fetchone()
        conn.execute("UPDATE st_revisions SET body = x'00' WHERE k = ?", ((session << 32) + 5,))
    with SQLiteStore(db, readonly=True) as view:
        page = view.history_page("s", 83, 10)  # from the snapshot at 80
        assert [r.rev for r in page.items] == list(range(83, 93))
        assert [r.state.rounds for r in page.items] == list(range(83, 93))
        assert (page.total, page.next) == (101, 93)
        with pytest.raises(CorruptStore):
            view.history("s")
        with pytest.raises(CorruptStore):
            view.history_page("s", 2, 10)  # the page that holds the damaged row


def test_a_chain_of_another_snapshot_policy_pages_the_same(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with SQLiteStore(db, snapshot_every=3) as writer:
        _grow(writer, "s", 30)
        whole = [r.model_dump_json() for r in writer.history("s")]
    for every in (1, 8, 64):
        with SQLiteStore(db, readonly=True, snapshot_every=every) as view:
            for start in (0, 1, 2, 3, 4, 29, 30):
                got = [r.model_dump_json() for r in view.history_page("s", start, 5).items]
                assert got == whole[start: start + 5], (every, start)


def test_a_page_with_a_missing_row_is_corrupt_not_short(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with SQLiteStore(db) as store:
        _grow(store, "s", 20)
    with closing(sqlite3.connect(db)) as conn, conn:
        (session,) = conn.execute("SELECT id FROM st_sessions WHERE sid = 's'").fetchone()
        conn.execute("DELETE FROM st_revisions WHERE k = ?", ((session << 32) + 12,))
    with SQLiteStore(db, readonly=True) as view, pytest.raises(CorruptStore, match="gap"):
        view.history_page("s", 10, 5)


def test_a_postgres_page_never_reads_the_rows_before_its_snapshot(pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url, snapshot_every=8) as store:
        _grow(store, "s", 100)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE st_revisions SET body = '\\x00'::bytea WHERE rev = 5")
    with PostgresStore(url, snapshot_every=8) as view:
        page = view.history_page("s", 83, 10)
        assert [r.state.rounds for r in page.items] == list(range(83, 93))
        with pytest.raises(CorruptStore):
            view.history("s")
