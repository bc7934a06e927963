"""SQLiteStore: the store contract in every durability mode, then what only SQLite has:
persistence, delta/snapshot storage, shared blobs, the hash chain, fsck, compact, group
commit and several connections on one file.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.codec import BLOB_MIN
from claimfsm.state.contract import BIG, StoreContract, make_revision, make_state, rich_state
from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
from claimfsm.state.fsck import fsck
from claimfsm.state.model import SessionState
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import SCHEMA_VERSION, ChainBroken, CorruptStore
from claimfsm.state.store import StateStore

VARIANTS = [
    {"durability": "normal"},
    {"durability": "full"},
    {"durability": "group"},
    {"durability": "normal", "snapshot_every": 3, "cache_size": 2},
]

# A schema version this claimfsm does not know.
NEXT = str(int(SCHEMA_VERSION) + 1)


class TestSQLiteStore(StoreContract):
    @pytest.fixture(params=VARIANTS, ids=["normal", "full", "group", "k3-tiny-cache"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
        self.views: list[SQLiteStore] = []
        with SQLiteStore(tmp_path / "st.db", **request.param) as store:
            yield store
        for view in self.views:
            view.close()

    def reopened(self, store: StateStore) -> StateStore:
        assert isinstance(store, SQLiteStore)
        view = SQLiteStore(store.path, durability="normal")
        self.views.append(view)
        return view


def _grow(store: SQLiteStore, sid: str, n: int, state: SessionState | None = None) -> list[Any]:
    """Create ``sid`` with five big pages, then ``n`` small steps."""
    state = state or make_state(sid, pages={f"u{i}": {"text": f"{i} {BIG}"} for i in range(5)})
    out = [store.create(make_revision(sid, 0, state))]
    for rev in range(1, n + 1):
        state = state.model_copy(update={"steps": [*state.steps, {"n": rev}], "rounds": rev})
        out.append(store.commit(make_revision(sid, rev, state), expected_rev=rev - 1))
    return out


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "st.db")


def _sql(db: str, statement: str, *args: Any) -> list[Any]:
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(statement, args).fetchall()


def test_survives_close_and_reopen(db: str) -> None:
    with SQLiteStore(db) as store:
        revisions = _grow(store, "s", 20)
        hashes = [store.revision_hash("s", r) for r in range(21)]
    with SQLiteStore(db) as store:
        assert list(store.history("s")) == revisions
        assert [store.revision_hash("s", r) for r in range(21)] == hashes
    assert _sql(db, "PRAGMA journal_mode") == [("wal",)]


def test_storage_is_proportional_to_the_change(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "s", 63)
        stats = store.stats()
    kinds = [k for (k,) in _sql(db, "SELECT kind FROM st_revisions ORDER BY k")]
    # The default interval; the row after a snapshot is BASED (kind 2: its ops apply to
    # the snapshot), the others append to ``steps``, which only applies to their parent.
    assert kinds == [0 if rev % 8 == 0 else 2 if rev % 8 == 1 else 1 for rev in range(64)]
    deltas = _sql(db, "SELECT max(length(body)), max(length(extra)) FROM st_revisions"
                      " WHERE kind > 0")[0]
    assert deltas[0] < 120 and deltas[1] < 20  # a step's worth, not a state's worth
    # Five page texts of ~13 KB each, stored once (and compressed) for 64 revisions.
    assert stats["blobs"] == 5 + 5  # each page entry and each page text
    assert stats["blob_bytes"] < 5 * len(BIG)
    assert stats["body_bytes"] < 64 * 200


def test_blobs_are_shared_across_sessions_and_forks(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "a", 5)
        before = store.stats()
        _grow(store, "b", 5)  # same pages, other session
        store.fork("a", 4, "c")
        after = store.stats()
    assert after["blobs"] == before["blobs"]
    assert after["blob_bytes"] == before["blob_bytes"]
    assert after["revisions"] == before["revisions"] + 6 + 5


def test_hashes_are_deterministic_across_files(tmp_path: Path) -> None:
    hashes = []
    for name in ("one.db", "two.db"):
        with SQLiteStore(tmp_path / name) as store:
            _grow(store, "s", 20)
            hashes.append([store.revision_hash("s", r) for r in range(21)])
    assert hashes[0] == hashes[1]
    assert len(set(hashes[0])) == 21
    rows = [_sql(str(tmp_path / n), "SELECT * FROM st_revisions ORDER BY k")
            for n in ("one.db", "two.db")]
    assert rows[0] == rows[1]


def test_hash_chain_links_each_revision_to_its_parent(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "a", 3)
        _grow(store, "b", 3, make_state("b", claim="other"))
        a = [store.revision_hash("a", r) for r in range(4)]
        b = [store.revision_hash("b", r) for r in range(4)]
    assert a[0] != b[0] and a[3] != b[3]


# -- fsck -----------------------------------------------------------------------------


def _tampered(db: str, statement: str, *args: Any) -> tuple[Any, ...]:
    """Build two sessions, run ``statement`` on the file, return the fsck problems."""
    with SQLiteStore(db) as store:
        _grow(store, "good", 20)
        _grow(store, "bad", 20, make_state("bad", pages={"u": {"text": BIG + "bad"}}))
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(statement, args)
    with SQLiteStore(db) as store:
        report = fsck(store)
    assert not report.ok and report.sessions == 2
    assert all(p.sid == "bad" for p in report.problems) and len(report.problems) == 1
    problem = report.problems[0]
    return problem.problem, problem.rev


BAD = 2 << 32  # k of revision 0 of the second session


def test_fsck_is_clean_on_a_sound_file(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "a", 40)
        store.fork("a", 30, "b")
        report = fsck(store)
    assert report.ok and report.sessions == 2 and report.revisions == 41 + 31


def test_fsck_finds_an_undecodable_delta(db: str) -> None:
    sql = "UPDATE st_revisions SET body = x'7b7b' WHERE k = ?"
    assert _tampered(db, sql, BAD + 7) == ("UNDECODABLE", 7)


def test_fsck_finds_edited_content(db: str) -> None:
    sql = "UPDATE st_revisions SET body = '{\"rounds\":[0,99]}' WHERE k = ?"
    assert _tampered(db, sql, BAD + 9) == ("HASH_MISMATCH", 9)


def test_fsck_finds_an_edited_hash(db: str) -> None:
    sql = "UPDATE st_revisions SET hash = zeroblob(32) WHERE k = ?"
    assert _tampered(db, sql, BAD + 12) == ("HASH_MISMATCH", 12)


def test_fsck_finds_edited_metadata(db: str) -> None:
    sql = "UPDATE st_revisions SET ts = 'tampered' WHERE k = ?"
    assert _tampered(db, sql, BAD + 3) == ("HASH_MISMATCH", 3)


def test_fsck_finds_a_gap(db: str) -> None:
    assert _tampered(db, "DELETE FROM st_revisions WHERE k = ?", BAD + 5) == ("REV_GAP", 5)


def test_fsck_finds_a_wrong_parent(db: str) -> None:
    sql = "UPDATE st_revisions SET parent_rev = 2 WHERE k = ?"
    assert _tampered(db, sql, BAD + 4) == ("MISSING_PARENT", 4)


def test_fsck_finds_a_missing_blob(db: str) -> None:
    text = BIG + "bad"
    with SQLiteStore(db, snapshot_every=1000) as store:
        _grow(store, "good", 3)
        _grow(store, "bad", 3, make_state("bad", pages={"u": {"text": text}}))
    with closing(sqlite3.connect(db)) as conn, conn:
        gone = conn.execute("DELETE FROM st_blobs WHERE h = ?",
                            (hashlib.sha256(text.encode()).digest(),))
        assert gone.rowcount == 1
    with SQLiteStore(db) as store:
        report = fsck(store)
        assert [(p.sid, p.rev, p.problem) for p in report.problems] == [
            ("bad", 0, "MISSING_BLOB")]
        with pytest.raises(CorruptStore) as info:
            store.get("bad", 2)
        assert info.value.code == "STORE_CORRUPT"


def test_fsck_finds_a_corrupt_blob(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "good", 3)
        _grow(store, "bad", 3, make_state("bad", claim="Z" * BLOB_MIN + "bad"))
    with closing(sqlite3.connect(db)) as conn, conn:
        changed = conn.execute(
            "UPDATE st_blobs SET data = CAST(replace(data, 'bad', 'BAD') AS BLOB)"
            " WHERE z = 0 AND instr(data, 'bad') > 0")
        assert changed.rowcount == 1
    with SQLiteStore(db) as store:
        report = fsck(store)
        assert [(p.sid, p.rev, p.problem) for p in report.problems] == [
            ("bad", 0, "BLOB_CORRUPT")]
        with pytest.raises(CorruptStore):
            store.head("bad")


def test_fork_refuses_a_broken_source(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "s", 6)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET ts = 'x' WHERE k = ?", ((1 << 32) + 2,))
    with SQLiteStore(db) as store:
        with pytest.raises(ChainBroken) as info:
            store.fork("s", 5, "copy")
        assert info.value.code == "CHAIN_BROKEN"
        assert list(store.sessions()) == ["s"]


# -- compact --------------------------------------------------------------------------


def test_compact_rewrites_chains_without_changing_a_revision(db: str) -> None:
    with SQLiteStore(db, snapshot_every=4) as store:
        revisions = _grow(store, "a", 40)
        _grow(store, "b", 9)
        hashes = [store.revision_hash("a", r) for r in range(41)]
    with SQLiteStore(db, snapshot_every=16) as store:
        report = store.compact()
        assert report.sessions == 2 and report.skipped == []
        # a: 4, 8, 12, 20, 24, 28, 36, 40 become deltas; b: 4, 8. The BASED rows after
        # them (a: 5, 9, 13, 21, 25, 29, 37; b: 5, 9) append to a list the snapshot below
        # them now lacks: plain deltas again (their bodies stay as they are).
        assert report.rewritten == 8 + 2 + 7 + 2
        assert store.compact().rewritten == 0  # idempotent
    kinds = [k for (k,) in _sql(db, "SELECT kind FROM st_revisions WHERE k < ? ORDER BY k",
                                2 << 32)]
    assert kinds == [0 if rev % 16 == 0 else 2 if rev % 16 == 1 else 1 for rev in range(41)]
    with SQLiteStore(db) as store:
        for rev in range(41):  # each read cold: a BASED row's shortcut from its snapshot
            store.clear_cache()
            assert store.get("a", rev) == revisions[rev]
        assert list(store.history("a")) == revisions
        assert [store.revision_hash("a", r) for r in range(41)] == hashes
        assert fsck(store).ok


def test_compact_skips_a_broken_session_and_leaves_it_alone(db: str) -> None:
    with SQLiteStore(db, snapshot_every=4) as store:
        _grow(store, "a", 10)
        _grow(store, "b", 10)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET ts = 'x' WHERE k = ?", ((2 << 32) + 6,))
    before = _sql(db, "SELECT * FROM st_revisions WHERE k >= ? ORDER BY k", 2 << 32)
    with SQLiteStore(db, snapshot_every=16) as store:
        report = store.compact()
    assert report.skipped == ["b"] and report.rewritten == 2 + 2  # a: 4, 8; BASED 5, 9
    assert _sql(db, "SELECT * FROM st_revisions WHERE k >= ? ORDER BY k", 2 << 32) == before


def test_compact_prunes_only_unreferenced_blobs(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "a", 3)
        count = store.stats()["blobs"]
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO st_blobs VALUES (zeroblob(32), 0, 'stray')")
    with SQLiteStore(db) as store:
        assert store.compact().blobs_dropped == 1
        assert store.stats()["blobs"] == count
        store.clear_cache()
        assert store.head("a").state.pages["u1"]["text"] == f"1 {BIG}"
        assert fsck(store).ok


# -- connections, threads, group commit -----------------------------------------------


def test_a_commit_is_one_statement_that_writes_one_row(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "s", 1)
        seen: list[str] = []
        store._conn.set_trace_callback(seen.append)
        changes = store._conn.total_changes
        store.commit(make_revision("s", 2, make_state("s", rounds=2)), expected_rev=1)
        store._conn.set_trace_callback(None)
        # One INSERT: no BEGIN, UPDATE or COMMIT, and no other row (no trigger).
        assert [sql.split()[0] for sql in seen] == ["INSERT"]
        assert store._conn.total_changes == changes + 1
        assert store.head("s").rev == 2
        with pytest.raises(RevConflict, match="head is 2, not 1"):
            store.commit(make_revision("s", 2, make_state("s", rounds=9)), expected_rev=1)


_V1 = (
    "CREATE TABLE st_sessions2 (id INTEGER PRIMARY KEY, sid TEXT NOT NULL UNIQUE,"
    " head INTEGER NOT NULL)",
    "INSERT INTO st_sessions2 SELECT id, sid, (SELECT max(k) & 4294967295 FROM st_revisions"
    " WHERE k >> 32 = st_sessions.id) FROM st_sessions",
    "DROP TABLE st_sessions",
    "ALTER TABLE st_sessions2 RENAME TO st_sessions",
    "CREATE TRIGGER st_head AFTER INSERT ON st_revisions BEGIN"
    " UPDATE st_sessions SET head = NEW.k & 4294967295"
    " WHERE id = NEW.k >> 32 AND head < NEW.k & 4294967295; END",
    "UPDATE st_meta SET value = '1' WHERE key = 'schema'",
)


def _as_version_1(db: str) -> None:
    """Rewrite ``db`` as schema version 1 wrote it: a head column moved by a trigger."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    for statement in _V1:
        conn.execute(statement)
    conn.execute("COMMIT")
    conn.close()


def test_a_version_1_file_is_read_as_it_is_and_upgraded_on_a_writable_open(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "s", 3)
        store.fork("s", 1, "f")
    _as_version_1(db)
    with SQLiteStore(db, readonly=True) as store:  # nothing written, the heads as they are
        assert store.head("s").rev == 3 and store.head("f").rev == 1
        assert [s.sid for s in store.summaries(SummaryQuery()).items] == ["f", "s"]
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone() == ("1",)
    with SQLiteStore(db) as store:
        store.commit(make_revision("s", 4, make_state("s", rounds=4)), expected_rev=3)
        assert store.head("s").rev == 4 and store.head("f").rev == 1
        assert fsck(store).ok
    with closing(sqlite3.connect(db)) as conn, conn:
        schema = conn.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone()
        assert schema == (SCHEMA_VERSION,)
        assert conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall() == []
        assert [r[1] for r in conn.execute("PRAGMA table_info(st_sessions)")] == [
            "id", "sid", "shares"]


UNKNOWN = str(int(SCHEMA_VERSION) + 1)


def test_a_file_of_an_unknown_schema_version_is_refused(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "s", 1)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_meta SET value = ? WHERE key = 'schema'", (UNKNOWN,))
    with pytest.raises(StoreError, match=f"schema version {UNKNOWN}, expected {SCHEMA_VERSION}"):
        SQLiteStore(db)


def test_two_connections_see_each_other_and_compare_and_set(db: str) -> None:
    with SQLiteStore(db) as one, SQLiteStore(db, durability="full") as two:
        _grow(one, "s", 2)
        assert two.head("s").rev == 2
        two.commit(make_revision("s", 3, make_state("s", claim="two")), expected_rev=2)
        assert one.head("s").state.claim == "two"  # head is read from the file
        with pytest.raises(RevConflict):
            one.commit(make_revision("s", 3, make_state("s", claim="one")), expected_rev=2)
        assert one.get("s", 3).state.claim == "two"


def test_group_commit_batches_concurrent_commits(db: str) -> None:
    threads, per_thread = 8, 10
    with SQLiteStore(db, durability="group", group_window=0.005) as store:
        barrier = threading.Barrier(threads)

        def worker(i: int) -> None:
            barrier.wait()
            _grow(store, f"t{i}", per_thread, make_state(f"t{i}", memory={"i": i}))

        pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        stats = store.stats()
        assert stats["group_commits"] == threads * (per_thread + 1)
        assert stats["group_batches"] < stats["group_commits"]
        assert fsck(store).ok
    with SQLiteStore(db) as store:
        for i in range(threads):
            assert store.head(f"t{i}").state.rounds == per_thread


def test_group_commit_lets_one_of_two_racers_win(db: str) -> None:
    with SQLiteStore(db, durability="group", group_window=0.02) as store:
        store.create(make_revision("s", 0))
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def racer(name: str) -> None:
            barrier.wait()
            try:
                store.commit(make_revision("s", 1, make_state("s", claim=name)), expected_rev=0)
            except RevConflict:
                outcomes.append("conflict")
            else:
                outcomes.append(name)

        pool = [threading.Thread(target=racer, args=(n,)) for n in ("x", "y")]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert sorted(outcomes)[0] == "conflict" and len(outcomes) == 2
        winner = next(o for o in outcomes if o != "conflict")
        assert store.head("s").state.claim == winner and store.head("s").rev == 1


def test_lives_beside_evidence_tables(db: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE ev_docs (id TEXT PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO ev_docs VALUES ('d1', 'evidence')")
    with SQLiteStore(db) as store:
        _grow(store, "s", 5)
        store.compact()
        assert fsck(store).ok
    assert _sql(db, "SELECT * FROM ev_docs") == [("d1", "evidence")]
    tables = {name for (name,) in _sql(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {t for t in tables if not t.startswith("ev_")} == {
        "st_meta", "st_sessions", "st_revisions", "st_blobs", "st_catalog",
        "st_tombstones", "st_timers", "st_keys"}


def test_closed_store_and_bad_options(db: str) -> None:
    store = SQLiteStore(db)
    store.create(make_revision("s", 0, rich_state("s")))
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError):
        store.head("s")
    with pytest.raises(ValueError, match="durability"):
        SQLiteStore(db, durability="fast")  # type: ignore[arg-type]
    group = SQLiteStore(db, durability="group")
    group.close()
    with pytest.raises(StoreError):
        group.commit(make_revision("s", 1, rich_state("s")), expected_rev=0)


@pytest.mark.parametrize("cold", [False, True])
def test_commits_on_a_fork_chain_as_on_a_fresh_read(tmp_path: Path, cold: bool) -> None:
    """The fork's head entry (built from the re-stamped rows, not read back) is what the
    next commit encodes against: its rows and hashes equal those of a store that read
    the fork from the file."""
    rows = []
    for name, reopen in (("cached.db", False), ("reread.db", True)):
        path = str(tmp_path / name)
        store = SQLiteStore(path)
        _grow(store, "a", 12, rich_state("a"))
        if cold:
            store.clear_cache()
            store.get("a", 9)  # the source entry from a cold read (fields not yet bytes)
        head = store.fork("a", 9, "b")
        if reopen:
            store.close()
            store = SQLiteStore(path)
            head = store.head("b")
        with store:
            for rev in range(10, 14):
                state = head.state.model_copy(update={"rounds": rev, "memory": {"n": rev}})
                head = store.commit(make_revision("b", rev, state),
                                    expected_rev=rev - 1)
            assert store.verify_chain("b").ok
        rows.append(_sql(path, "SELECT * FROM st_revisions WHERE k >= (2 << 32) ORDER BY k"))
    assert rows[0] == rows[1] and len(rows[0]) == 14


def test_fork_past_the_head_is_refused_even_with_a_warm_cache(db: str) -> None:
    with SQLiteStore(db) as store:
        _grow(store, "a", 3)
        with pytest.raises(UnknownRevision):
            store.fork("a", 4, "b")
        with pytest.raises(UnknownSession):
            store.fork("nobody", 0, "c")


def test_fork_of_a_source_erased_by_another_store_is_refused(db: str) -> None:
    """The source revision cached in this store spares the head check; its rows, erased
    since by another store, are then missing: refused as unknown, no half fork left."""
    with SQLiteStore(db) as store, SQLiteStore(db) as other:
        _grow(store, "a", 3)
        store.get("a", 3)  # cached: the fork skips the head check
        other.erase({"a": None}, actor="t", at="2026-01-01T00:00:00+00:00")
        with pytest.raises(UnknownRevision):
            store.fork("a", 3, "b")
        with pytest.raises(UnknownSession):
            store.head("b")
        assert list(store.sessions()) == []


@pytest.mark.parametrize("cached", [False, True])
def test_a_fork_reads_the_source_rows_once_and_nothing_back(db: str, cached: bool) -> None:
    """One statement reads revisions 0..at (plus the head's when revision ``at`` is not
    cached); the copy's revisions 0 and ``at`` come from that pass, not from the file."""
    with SQLiteStore(db) as store:
        _grow(store, "a", 5, rich_state("a"))
        store.clear_cache()
        if cached:
            store.get("a", 3)
        assert store._conn is not None
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        store.fork("a", 3, "b")
        first, at = store.get("b", 0), store.get("b", 3)
        store._conn.set_trace_callback(None)
        # (Blobs the decoded revisions reference are fetched once, as any read does.)
        reads = [s for s in statements if s.startswith("SELECT") and "st_revisions" in s]
        assert len(reads) == (1 if cached else 2), reads
        assert not [s for s in statements[statements.index("COMMIT"):] if "st_revisions" in s]
        assert first.sid == at.sid == first.state.sid == at.state.sid == "b"
        with SQLiteStore(db, readonly=True) as cold:
            assert cold.get("b", 0).model_dump_json() == first.model_dump_json()
            assert cold.get("b", 3).model_dump_json() == at.model_dump_json()
            assert cold.verify_chain("b").ok


def test_the_chain_hashes_of_a_fixed_session_do_not_change(tmp_path: Path) -> None:
    """Hashes are over each field's canonical bytes, not the stored layout: the values
    below were computed by the schema-2 code (named, packed snapshots) and must stay,
    or files written before a change would no longer verify."""
    with SQLiteStore(tmp_path / "p.db", snapshot_every=4) as store:
        state = rich_state("s")
        store.create(make_revision("s", 0, state))
        for rev in range(1, 11):
            state = state.model_copy(update={"steps": [*state.steps, {"n": rev}],
                                             "rounds": rev,
                                             "memory": {**state.memory, f"k{rev}": rev}})
            store.commit(make_revision("s", rev, state), expected_rev=rev - 1)
        store.fork("s", 6, "f")
        assert store.revision_hash("s", 10) == (
            "10d1f72e886b8f67df9c4ca3c923c567c087015b2e060b7e80e95444139a2b7e")
        assert store.revision_hash("f", 6) == (
            "706678d284d159bb15805487b6ade21a00a7a9ed775d5272a516acb30da22a25")
