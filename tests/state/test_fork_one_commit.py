"""A fork and its own revision as one commit (``StateStore.fork(..., then=...)``): on
PostgreSQL the rows are byte for byte those of a fork followed by a commit of the same
revision; on SQLite the fork shares its parent's rows and reads exactly as that copy
does (state/sqlite/shares.py); on both a failure at the transaction's last statements (injected by a
trigger) leaves no trace of the fork: no session, no row, no index entry, fsck clean."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from claimfsm.state.contract import rich_state
from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.errors import StoreError, UnknownSession
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from tests.support.pg import PgServer

TS = "2026-02-01T00:00:00Z"


def _source(store: StateStore, n: int = 5, rich: bool = False) -> None:
    state = SessionState(sid="src", claim="Sea levels are rising.", fsm="PARSE_CLAIM",
                         verdict={"label": "SUPPORTED"})
    if rich:  # large texts (blobs), NUL-led strings, a packed snapshot
        state = rich_state("src")
    store.create(Revision(sid="src", rev=0, parent_rev=None, fsm=state.fsm, skill=None,
                          envelope=None, state=state, ts="2026-01-01T00:00:00Z"))
    for rev in range(1, n + 1):
        state = state.model_copy(update={"rounds": rev, "memory": {"log": list(range(rev))}})
        store.commit(Revision(sid="src", rev=rev, parent_rev=rev - 1, fsm=state.fsm,
                              skill="step", envelope={"s": "ok", "d": {"n": rev}}, state=state,
                              ts=f"2026-01-01T00:00:0{rev}Z"), expected_rev=rev - 1)


def _fork(store: StateStore, one: bool, at: int = 3) -> Revision:
    if one:
        return store.fork("src", at, "f1", then=lambda copy: forked_revision(copy, "src", TS))
    copy = store.fork("src", at, "f1")
    return store.commit(forked_revision(copy, "src", TS), expected_rev=copy.rev)


def _sqlite_rows(path: Path) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return [conn.execute("SELECT * FROM st_revisions ORDER BY k").fetchall(),
                conn.execute("SELECT * FROM st_sessions ORDER BY id").fetchall(),
                conn.execute("SELECT * FROM st_catalog ORDER BY id").fetchall(),
                conn.execute("SELECT * FROM st_blobs ORDER BY h").fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize("rich", [False, True])
@pytest.mark.parametrize("snapshot_every", [8, 4, 1])
def test_sqlite_a_shared_fork_reads_as_the_copy_and_its_commit(tmp_path: Path,
                                                               snapshot_every: int,
                                                               rich: bool) -> None:
    heads, files = [], []
    for one in (False, True):
        path = tmp_path / f"{one}.db"
        with SQLiteStore(path, snapshot_every=snapshot_every) as store:
            _source(store, rich=rich)
            heads.append(_fork(store, one))
        files.append(path)
    assert heads[0] == heads[1]
    copied, shared = (_sqlite_rows(path) for path in files)
    # The same sessions (but for the segment), listing and blobs; the shared fork wrote
    # one row (a snapshot), where the copy wrote revisions 0..3 again.
    assert copied[2:4] == shared[2:4]
    assert copied[1] == [(1, "src", None), (2, "f1", None)]
    assert shared[1] == [(1, "src", None), (2, "f1", '[[0,3,1,"src"]]')]
    fork_rows = [row for row in shared[0] if row[0] >> 32 == 2]
    assert [(row[0] & 0xFFFFFFFF, row[2]) for row in fork_rows] == [(4, 0)]
    views = [SQLiteStore(path, readonly=True) for path in files]
    try:
        old, new = views
        assert [r.model_dump_json() for r in old.history("f1")] == [
            r.model_dump_json() for r in new.history("f1")]
        for rev in range(5):
            assert old.get("f1", rev) == new.get("f1", rev)
        assert old.head("f1") == new.head("f1") and old.forks("src") == new.forks("src")
        assert fsck(old).ok and fsck(new).ok
        # The shared revisions keep their parent's hashes: the fork's own revision is
        # chained onto the parent's revision 3 (the copy re-chained 0..3 under "f1").
        assert [new.revision_hash("f1", r) for r in range(4)] == [
            new.revision_hash("src", r) for r in range(4)]
        assert old.revision_hash("f1", 3) != old.revision_hash("src", 3)
    finally:
        for view in views:
            view.close()


def test_postgres_rows_are_those_of_a_fork_then_a_commit(pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    dumps = []
    for one in (False, True):
        url = pg_server.new_schema()
        with PostgresStore(url) as store:
            _source(store)
            _fork(store, one)
        with psycopg.connect(url, autocommit=True) as conn:
            dumps.append([
                conn.execute("SELECT s.sid, r.rev, r.parent_rev, r.kind, r.fsm, r.skill, r.ts,"
                             " r.body, r.extra, r.hash FROM st_revisions r JOIN st_sessions s"
                             " ON s.id = r.session ORDER BY s.id, r.rev").fetchall(),
                conn.execute("SELECT sid, head FROM st_sessions ORDER BY id").fetchall(),
                conn.execute("SELECT s.sid, c.claim, c.verdict, c.parent, c.parent_rev,"
                             " c.forked FROM st_catalog c JOIN st_sessions s ON s.id = c.id"
                             " ORDER BY s.id").fetchall()])
    assert dumps[0] == dumps[1]


# Each trigger fails one of the fork's last statements: its own revision's row, or the
# forks index entry written after it.
SQLITE_FAULTS = {
    "own row": "CREATE TRIGGER boom BEFORE INSERT ON st_revisions WHEN NEW.ts = '" + TS
               + "' BEGIN SELECT RAISE(ABORT, 'injected'); END",
    "index": "CREATE TRIGGER boom BEFORE INSERT ON st_catalog WHEN NEW.parent IS NOT NULL"
             " BEGIN SELECT RAISE(ABORT, 'injected'); END",
}


@pytest.mark.parametrize("fault", sorted(SQLITE_FAULTS))
def test_sqlite_a_failed_fork_leaves_nothing(tmp_path: Path, fault: str) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path, durability="full") as store:
        _source(store)
    before = _sqlite_rows(path)
    conn = sqlite3.connect(path)
    conn.execute(SQLITE_FAULTS[fault])
    conn.commit()
    conn.close()
    with SQLiteStore(path, durability="full") as store:
        with pytest.raises(StoreError):
            _fork(store, True)
        with pytest.raises(UnknownSession):
            store.head("f1")
        assert store.forks("src") == []
    assert _sqlite_rows(path) == before
    with SQLiteStore(path, readonly=True) as view:
        assert fsck(view).ok
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER boom")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:  # the name is free: the fork then lands whole
        assert _fork(store, True).rev == 4
        assert store.forks("src") == [{"sid": "f1", "rev": 3, "at": TS}]


@pytest.mark.parametrize("fault", ["st_revisions", "st_catalog"])
def test_postgres_a_failed_fork_leaves_nothing(pg_server: PgServer, fault: str) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _source(store)
    when = f"NEW.ts = '{TS}'" if fault == "st_revisions" else "NEW.parent IS NOT NULL"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS"
                     " $$ BEGIN RAISE EXCEPTION 'injected'; END $$")
        conn.execute(f"CREATE TRIGGER boom BEFORE INSERT OR UPDATE ON {fault} FOR EACH ROW"
                     f" WHEN ({when}) EXECUTE FUNCTION boom()")
        count = conn.execute("SELECT count(*) FROM st_revisions").fetchone()
    with PostgresStore(url) as store:
        with pytest.raises(StoreError):
            _fork(store, True)
        with pytest.raises(UnknownSession):
            store.head("f1")
        assert store.forks("src") == [] and list(store.sessions()) == ["src"]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM st_revisions").fetchone() == count
        conn.execute(f"DROP TRIGGER boom ON {fault}")
    with PostgresStore(url) as store:
        assert _fork(store, True).rev == 4 and store.verify_chain("f1").ok
        assert store.forks("src") == [{"sid": "f1", "rev": 3, "at": TS}]


@pytest.mark.parametrize("rich", [False, True])
@pytest.mark.parametrize("at", [0, 1, 3])
def test_sqlite_what_a_fork_caches_reads_as_the_file_does(tmp_path: Path, at: int,
                                                          rich: bool) -> None:
    # The fork keeps its revisions 0, at and at + 1 decoded; a cold view must read the
    # same revisions, byte for byte, from the file.
    with SQLiteStore(tmp_path / "s.db") as store:
        _source(store, rich=rich)
        head = _fork(store, True, at=at)
        warm = [store.get("f1", rev).model_dump_json() for rev in range(head.rev + 1)]
        with SQLiteStore(tmp_path / "s.db", readonly=True) as cold:
            assert [cold.get("f1", rev).model_dump_json()
                    for rev in range(head.rev + 1)] == warm
            assert [cold.revision_hash("f1", rev) for rev in range(head.rev + 1)] == [
                store.revision_hash("f1", rev) for rev in range(head.rev + 1)]
