"""Commit times in SQLite rows (schema 4): the engine's UTC stamps stored in 7 bytes, any
other text as text, every one read back exactly as committed, by every reader; a
version-3 file (text stamps) read as it is and upgraded by its first writable open."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.codec import CodecError
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import SCHEMA_VERSION, CorruptStore
from claimfsm.state.sqlite.stamp import pack_ts, ts_text

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ODD = [
    "2026-01-01T00:00:05Z",  # the contract suite's own form
    "2026-11-26T05:12:33+00:00",  # no fraction (isoformat of a whole second)
    "2026-11-26T05:12:33.123456+02:00",  # another offset
    "2026-11-26T05:12:33.123456",  # no offset
    "2016-12-31T23:59:60.000000+00:00",  # a leap second
    "1969-12-31T23:59:59.999999+00:00",  # before 1970
    "2026-13-01T00:00:00.000000+00:00",  # no such month
    "２026-11-26T05:12:33.123456+00:00",  # a digit that is not ASCII
    "2026-11-26T05:12:33.1_3456+00:00",  # what int() would take
    "9999-12-31T23:59:59.999999+00:00",  # past what 7 bytes hold
    "",
]


def _sql(db: Path, statement: str, *args: Any) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(statement, args).fetchall()
    finally:
        conn.close()


def _stamp(rev: int) -> str:
    """As the engine stamps: microseconds always written (revision 0's are zero)."""
    return (datetime(2026, 11, 26, 5, tzinfo=UTC)
            + timedelta(seconds=rev * 61, microseconds=rev * 7919)).isoformat(
                timespec="microseconds")


@settings(deadline=None)  # pure arithmetic: a busy machine is no failure
@given(st.integers(min_value=0, max_value=(3800 - 1970) * 365 * 86_400 * 10**6))
def test_an_engine_stamp_packs_to_7_bytes_and_back_to_the_same_text(us: int) -> None:
    ts = (_EPOCH + timedelta(microseconds=us)).isoformat(timespec="microseconds")
    packed = pack_ts(ts)
    assert type(packed) is bytes and len(packed) == 7
    assert ts_text(packed) == ts


@pytest.mark.parametrize("ts", _ODD)
def test_any_other_stamp_stays_text(ts: str) -> None:
    assert pack_ts(ts) == ts and ts_text(ts) == ts


@pytest.mark.parametrize("bad", [
    b"\x00" * 6, b"\x00" * 8,
    b"\x00\x00\x00\xff\xff\xff\xff",  # more microseconds than an hour has
    12, None, 1.5,
])
def test_a_stored_stamp_of_another_shape_is_refused(bad: object) -> None:
    with pytest.raises(CodecError):
        ts_text(bad)


def _session(store: SQLiteStore, sid: str, n: int, stamp: Any = _stamp) -> list[Revision]:
    out = [make_revision(sid, 0, ts=stamp(0))]
    store.create(out[0])
    for rev in range(1, n):
        state = make_state(sid, rounds=rev, fsm="DONE" if rev == n - 1 else "VERIFY")
        out.append(make_revision(sid, rev, state, ts=stamp(rev)))
        store.commit(out[-1], expected_rev=rev - 1)
    return out


def test_every_reader_returns_the_stamps_committed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SQLiteStore(db, snapshot_every=4) as store:
        packed = _session(store, "p", 11)
        odd = _session(store, "o", len(_ODD), stamp=lambda rev: _ODD[rev])
    kinds = _sql(db, "SELECT k >> 32, typeof(ts), count(*) FROM st_revisions GROUP BY 1, 2")
    assert sorted(kinds) == [(1, "blob", 11), (2, "text", len(_ODD))]
    with SQLiteStore(db) as store:
        for sid, revisions in (("p", packed), ("o", odd)):
            assert list(store.history(sid)) == revisions
            store.clear_cache()
            assert [store.get(sid, r.rev) for r in revisions] == revisions
            store.clear_cache()
            assert list(store.history_page(sid, 5, 3).items) == revisions[5:8]
        updated = {s.sid: s.updated for s in store.summaries(SummaryQuery()).items}
        assert updated == {"p": packed[-1].ts, "o": odd[-1].ts}
        assert {e.sid: e.ts for e in store.ended(["DONE"])} == updated
        assert fsck(store).ok
        store.fork("p", 6, "f")
        assert store.get("f", 6).ts == packed[6].ts and fsck(store).ok
    # a fork copies the stamps as stored: packed stays packed
    assert _sql(db, "SELECT typeof(ts), count(*) FROM st_revisions WHERE k >> 32 = 3"
                " GROUP BY 1") == [("blob", 7)]


def test_a_version_3_file_reads_as_it_is_and_is_upgraded_by_a_writable_open(
        tmp_path: Path) -> None:
    db = tmp_path / "v3.db"
    with SQLiteStore(db, snapshot_every=4) as store:
        revisions = _session(store, "s", 10)
        hashes = [store.revision_hash("s", r) for r in range(10)]
    conn = sqlite3.connect(db, isolation_level=None)
    for k, ts in conn.execute("SELECT k, ts FROM st_revisions").fetchall():
        conn.execute("UPDATE st_revisions SET ts = ? WHERE k = ?", (ts_text(ts), k))
    conn.execute("UPDATE st_meta SET value = '3' WHERE key = 'schema'")
    conn.close()
    assert _sql(db, "SELECT DISTINCT typeof(ts) FROM st_revisions") == [("text",)]
    with SQLiteStore(db, readonly=True) as store:
        assert list(store.history("s")) == revisions and fsck(store).ok
        assert [store.revision_hash("s", r) for r in range(10)] == hashes
    assert _sql(db, "SELECT value FROM st_meta WHERE key = 'schema'") == [("3",)]
    with SQLiteStore(db, snapshot_every=4) as store:
        more = make_revision("s", 10, make_state("s", rounds=10), ts=_stamp(10))
        store.commit(more, expected_rev=9)
        store.fork("s", 4, "f")
        store.clear_cache()
        assert list(store.history("s")) == [*revisions, more]
        assert [store.revision_hash("s", r) for r in range(10)] == hashes and fsck(store).ok
    assert _sql(db, "SELECT value FROM st_meta WHERE key = 'schema'") == [(SCHEMA_VERSION,)]
    # the old rows keep their text; the new ones are packed
    assert _sql(db, "SELECT typeof(ts), count(*) FROM st_revisions WHERE k >> 32 = 1"
                " GROUP BY 1 ORDER BY 1") == [("blob", 1), ("text", 10)]


@pytest.mark.parametrize("bad", [b"\x01\x02\x03", b"\x00" * 8])
def test_a_stamp_of_another_shape_in_the_file_is_corrupt_store(tmp_path: Path,
                                                               bad: object) -> None:
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        _session(store, "s", 4)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE st_revisions SET ts = ? WHERE k = (1 << 32) + 3", (bad,))
    conn.close()
    with SQLiteStore(db, readonly=True) as store:
        with pytest.raises(CorruptStore):
            store.get("s", 3)
        with pytest.raises(CorruptStore):
            store.history("s")
        with pytest.raises(CorruptStore):
            store.summaries(SummaryQuery())
        assert store.get("s", 2).rev == 2


def test_another_text_in_place_of_a_stamp_is_found_by_fsck(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        _session(store, "s", 4)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE st_revisions SET ts = ? WHERE k = (1 << 32) + 3", (_stamp(9),))
    conn.close()
    with SQLiteStore(db, readonly=True) as store:
        assert not fsck(store).ok  # the chain hash covers the stamp's text
