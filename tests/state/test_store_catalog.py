"""The SQLite catalog on files written before it existed, and its one-query pages."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.sqlite.catalog import _PAGE
from claimfsm.state.sqlite.store import SQLiteStore
from tests.support.peek import peek


def _old_file(db: Path) -> None:
    with SQLiteStore(db) as store:
        for i in range(3):
            store.create(make_revision(f"s{i}", 0, make_state(f"s{i}", claim=f"claim {i}")))
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE st_catalog")  # as a file from before the catalog
    conn.commit()
    conn.close()


def test_old_file_listed_read_only_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _old_file(db)
    with SQLiteStore(db, readonly=True) as store:
        page = store.summaries(SummaryQuery(q="claim 1"))
        assert [s.sid for s in page.items] == ["s1"]
    conn = sqlite3.connect(db)
    found = conn.execute("SELECT count(*) FROM sqlite_master WHERE name='st_catalog'")
    assert found.fetchone()[0] == 0


def test_old_file_gets_its_catalog_on_a_writable_open(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _old_file(db)
    with SQLiteStore(db) as store:
        assert [s.claim for s in store.summaries(SummaryQuery()).items] == [
            "claim 2", "claim 1", "claim 0"]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT id, claim FROM st_catalog ORDER BY id").fetchall() == [
        (1, "claim 0"), (2, "claim 1"), (3, "claim 2")]


def test_a_page_reads_only_its_rows(tmp_path: Path) -> None:
    # Keyset paging: the query plan seeks by session id, it does not sort the table.
    with SQLiteStore(tmp_path / "x.db") as store:
        store.create(make_revision("a", 0))
        store.summaries(SummaryQuery())
        plan = store._read(lambda c: c.execute(
            "EXPLAIN QUERY PLAN " + _PAGE + " WHERE s.id < 10 ORDER BY s.id DESC").fetchall())
    text = " ".join(str(row[-1]) for row in plan)
    assert "USE TEMP B-TREE" not in text and "SEARCH s USING INTEGER PRIMARY KEY" in text
    # each head is found by a seek into the session's key range, never a scan
    assert "SCAN" not in text and "SEARCH st_revisions USING INTEGER PRIMARY KEY" in text


def test_postgres_database_from_before_the_catalog(pg_server: Any) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        for i in range(3):
            store.create(make_revision(f"s{i}", 0, make_state(f"s{i}", claim=f"claim {i}\x00")))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE st_catalog")
    with PostgresStore(url, create=False) as store:  # read-only: listed from the heads
        assert [s.sid for s in store.summaries(SummaryQuery(q="claim 1")).items] == ["s1"]
    with PostgresStore(url) as store:  # writable: the catalog is made and filled
        assert [s.claim for s in store.summaries(SummaryQuery()).items] == [
            "claim 2\ufffd", "claim 1\ufffd", "claim 0\ufffd"]
        assert [s.sid for s in store.summaries(SummaryQuery(q="CLAIM 0")).items] == ["s0"]


def test_steps_write_no_catalog_rows_listing_fills_claims(tmp_path: Path) -> None:
    db = tmp_path / "lazy.db"
    with SQLiteStore(db) as store:
        for i in range(3):
            state = make_state(f"s{i}", claim=f"claim {i}")
            store.create(make_revision(f"s{i}", 0, state))
            store.commit(make_revision(f"s{i}", 1, state.model_copy(update={"rounds": 1})),
                         expected_rev=0)
    def rows() -> list[Any]:
        return peek(db, "SELECT id, claim, verdict FROM st_catalog ORDER BY id")

    assert rows() == []  # creating and stepping sessions adds nothing to the file
    with SQLiteStore(db, readonly=True) as view:
        assert [s.claim for s in view.summaries(SummaryQuery(q="CLAIM 2")).items] == ["claim 2"]
    assert rows() == []  # a read-only listing writes nothing
    with SQLiteStore(db) as store:  # writable, but it only lists: nothing written either
        assert [s.sid for s in store.summaries(SummaryQuery(limit=2)).items] == ["s2", "s1"]
    assert rows() == []
    with SQLiteStore(db) as store:  # once the store writes, its listings keep the claims
        store.create(make_revision("s3", 0, make_state("s3", claim="claim 3")))
        assert [s.sid for s in store.summaries(SummaryQuery(limit=2)).items] == ["s3", "s2"]
    # the rows the page read (its two, and the one that says there is a next page)
    assert rows() == [(2, "claim 1", None), (3, "claim 2", None), (4, "claim 3", None)]
