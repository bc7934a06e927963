"""The SQLite store's commit path word for word: each refusal's message and attributes,
a lost compare-and-set between two stores of one file, the verdict catalog kept in the
same transaction, a busy database waited out, SQLite's other errors mapped to the store's,
and every committed revision read back cold. Each test kills mutants of
state/sqlite/store.py, inserts.py, core.py and entries.py that the store's contract tests
let live (`make mutate`, docs/testing.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from claimfsm._base.errors import BadInput
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import RevConflict, StoreError, UnknownSession
from claimfsm.state.model import Revision
from claimfsm.state.sqlite import SQLiteStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "c.db"


@pytest.fixture
def store(db: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db) as opened:
        yield opened


def rev(n: int, sid: str = "s", **state: Any) -> Revision:
    return make_revision(sid, n, make_state(sid, **state))


def labels(db: Path) -> list[tuple[int, str | None]]:
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute("SELECT id, verdict FROM st_catalog ORDER BY id").fetchall()


# -- refusals, word for word ------------------------------------------------------------


def test_a_revision_stamped_for_another_session_is_bad_input(store: SQLiteStore) -> None:
    other = make_state("other")
    with pytest.raises(BadInput) as info:
        store.create(rev(0).model_copy(update={"state": other}))
    assert info.value.field == "state.sid"
    assert info.value.msg == "revision.sid 's' differs from state.sid 'other'"
    store.create(rev(0))
    with pytest.raises(BadInput) as info:
        store.commit(rev(1).model_copy(update={"state": other}), expected_rev=0)
    assert (info.value.field, info.value.rev) == ("state.sid", 1)
    assert store.head("s").rev == 0 and store.sessions() == ["s"]


def test_a_first_revision_must_be_zero_without_a_parent(store: SQLiteStore) -> None:
    for first in (rev(1), rev(0).model_copy(update={"parent_rev": 0})):
        with pytest.raises(RevConflict) as info:
            store.create(first)
        assert (info.value.sid, info.value.rev) == ("s", first.rev)
        assert info.value.msg == "a session starts at revision 0 with no parent"
    assert store.sessions() == []


def test_a_session_that_exists_is_not_created_again(store: SQLiteStore) -> None:
    store.create(rev(0))
    with pytest.raises(RevConflict) as info:
        store.create(rev(0))
    assert (info.value.sid, info.value.msg) == ("s", "session 's' already exists")


def test_a_revision_that_does_not_follow_names_both_numbers(store: SQLiteStore) -> None:
    store.create(rev(0))
    with pytest.raises(RevConflict) as info:
        store.commit(rev(2), expected_rev=0)
    assert (info.value.sid, info.value.rev, info.value.expected) == ("s", 2, 0)
    assert info.value.msg == "revision 2 (parent 1) does not follow expected_rev 0"
    with pytest.raises(UnknownSession) as unknown:
        store.commit(rev(2, "nobody"), expected_rev=0)
    assert (unknown.value.sid, unknown.value.msg) == ("nobody", "no session 'nobody'")


def test_committing_to_an_unknown_session_names_it(store: SQLiteStore) -> None:
    with pytest.raises(UnknownSession) as info:
        store.commit(rev(1, "ghost"), expected_rev=0)
    assert (info.value.sid, info.value.msg) == ("ghost", "no session 'ghost'")


def test_an_expected_revision_ahead_of_the_head_is_a_conflict(store: SQLiteStore) -> None:
    store.create(rev(0))
    with pytest.raises(RevConflict) as info:
        store.commit(rev(4), expected_rev=3)
    assert (info.value.sid, info.value.expected) == ("s", 3)
    assert info.value.msg == "expected_rev 3 is ahead of the head"


def test_a_lost_compare_and_set_names_the_head_found(db: Path) -> None:
    with SQLiteStore(db) as mine, SQLiteStore(db) as theirs:
        mine.create(rev(0))
        mine.commit(rev(1), expected_rev=0)
        theirs.commit(rev(2, claim="theirs"), expected_rev=1)
        with pytest.raises(RevConflict) as info:
            mine.commit(rev(2, claim="mine"), expected_rev=1)
        assert (info.value.sid, info.value.head, info.value.expected) == ("s", 2, 1)
        assert info.value.msg == "head is 2, not 1"
        assert mine.head("s").state.claim == "theirs"


# -- what a commit writes -------------------------------------------------------------------


def test_every_committed_revision_reads_back_warm_and_cold(db: Path) -> None:
    big = {"text": "x" * 50_000}  # large values go to the blob table
    committed = [rev(0), rev(1, pages={"u": big}), rev(2, pages={"u": big, "v": big}),
                 rev(3, memory={"k": 1})]
    with SQLiteStore(db, snapshot_every=2) as store:
        store.create(committed[0])
        for r in committed[1:]:
            assert store.commit(r, expected_rev=r.rev - 1) == r
        assert [store.get("s", r.rev) for r in committed] == committed
        assert store.head("s") == committed[-1]
    with SQLiteStore(db, snapshot_every=2) as cold:
        assert list(cold.history("s")) == committed
        assert cold.verify_chain("s").ok


def test_the_catalog_follows_the_verdict_in_the_same_commit(db: Path) -> None:
    def judged(n: int, label: str | None, sid: str = "s") -> Revision:
        return rev(n, sid, verdict=None if label is None else {"label": label, "n": n})

    with SQLiteStore(db) as store:
        store.create(judged(0, None))
        store.create(judged(0, "REFUTES", "t"))
        assert labels(db) == [(2, "REFUTES")]
        store.commit(judged(1, "SUPPORTS"), expected_rev=0)
        assert labels(db) == [(1, "SUPPORTS"), (2, "REFUTES")]
        store.commit(judged(2, "SUPPORTS"), expected_rev=1)  # another verdict, same label
        store.commit(judged(3, None), expected_rev=2)
        assert labels(db) == [(1, None), (2, "REFUTES")]


# -- SQLite's own troubles --------------------------------------------------------------------


class Flaky:
    """A connection whose next ``fail`` statements starting with ``when`` raise ``error``
    (then it works again)."""

    def __init__(self, conn: sqlite3.Connection, error: str, fail: int = 1,
                 when: str = "INSERT INTO st_revisions") -> None:
        self.conn, self.error, self.fail, self.when = conn, error, fail, when

    def execute(self, sql: str, *args: Any) -> Any:
        if self.fail and sql.startswith(self.when):
            self.fail -= 1
            raise sqlite3.OperationalError(self.error)
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def blob_count(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn, conn:
        (n,) = conn.execute("SELECT count(*) FROM st_blobs").fetchone()
    return int(n)


def pages(blob: bool) -> dict[str, Any]:
    """A tool slice large enough to go to the blob table, or none."""
    return {"u": {"text": "y" * 50_000}} if blob else {}


@pytest.mark.parametrize("blob", [False, True])
def test_a_busy_database_is_waited_out(store: SQLiteStore, blob: bool) -> None:
    store.create(rev(0))
    real = store._conn
    store._conn = Flaky(real, "database is locked", fail=2)  # type: ignore[assignment]
    try:
        committed = store.commit(rev(1, pages=pages(blob)), expected_rev=0)
    finally:
        store._conn = real
    assert store.head("s") == committed and store.get("s", 1) == committed


@pytest.mark.parametrize("blob", [False, True])
def test_another_sqlite_error_is_a_store_error_and_writes_nothing(
        store: SQLiteStore, db: Path, blob: bool) -> None:
    store.create(rev(0))
    real = store._conn
    store._conn = Flaky(real, "disk I/O error")  # type: ignore[assignment]
    try:
        with pytest.raises(StoreError) as info:
            store.commit(rev(1, pages=pages(blob)), expected_rev=0)
    finally:
        store._conn = real
    assert info.value.field == "db" and str(db) in info.value.msg
    assert "disk I/O error" in info.value.msg
    # The blobs and the row are one transaction: a failed row leaves no blob behind.
    assert store.head("s").rev == 0 and blob_count(db) == 0


def test_a_closed_store_says_so_on_every_write(db: Path) -> None:
    store = SQLiteStore(db)
    store.create(rev(0))
    store.close()
    for write in (lambda: store.commit(rev(1), expected_rev=0), lambda: store.create(rev(0, "t"))):
        with pytest.raises(StoreError) as info:
            write()
        assert info.value.msg == "store is closed"
