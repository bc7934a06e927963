"""SQLiteStore's cold read of one revision (``claimfsm.state.sqlite.read``): what it returns, what
it refuses, and the stored forms it relies on (small snapshots raw, small dicts as key
updates, the default snapshot interval).
"""

from __future__ import annotations

import sqlite3
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimfsm.state.codec import STATE_FIELDS, pack_row, unpack_row
from claimfsm.state.contract import make_revision, make_state, rich_state
from claimfsm.state.errors import UnknownRevision
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import SCHEMA_VERSION, CorruptStore
from tests.state.test_codec import field_updates, json_values


def _dump(revision: Revision) -> bytes:
    return orjson.dumps(revision.model_dump(mode="json"))


def _sql(db: Path, statement: str, *args: Any) -> list[Any]:
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(statement, args).fetchall()


def _commit_all(store: SQLiteStore, revisions: list[Revision], first: int = 0) -> None:
    for revision in revisions[first:]:
        if revision.rev == 0:
            store.create(revision)
        else:
            store.commit(revision, expected_rev=revision.rev - 1)


def _session(updates: list[tuple[dict[str, Any], Any]], sid: str = "s") -> list[Revision]:
    """Revisions of ``sid``: each applies its field update; a memory key may be added
    (small dicts that keep keys are stored as key updates) or the oldest one dropped.
    """
    state = make_state(sid, memory={"a": "x" * 40, "b": [1, 2, 3]})
    out = []
    for rev, (update, key) in enumerate([({}, None), *updates]):
        memory = dict(state.memory)
        if key is not None:
            memory[f"k{rev}"] = key
        elif memory:
            memory.pop(next(iter(memory)))
        state = state.model_copy(update={**update, "memory": memory})
        out.append(make_revision(sid, rev, state, skill="k" if rev else None,
                                 envelope={"d": {"n": rev}} if rev % 2 else None,
                                 events=[{"rev": rev}] if rev % 3 else []))
    return out


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(field_updates, st.one_of(st.none(), json_values)),
                min_size=1, max_size=20),
       st.integers(1, 9), st.data())
def test_cold_reads_return_what_was_committed_and_commits_continue_from_them(
    tmp_path: Path, updates: list[tuple[dict[str, Any], Any]], every: int, data: st.DataObject
) -> None:
    revisions = _session(updates)
    ref, cold = tmp_path / f"ref-{every}-{len(updates)}.db", tmp_path / "cold.db"
    ref.unlink(missing_ok=True)
    cold.unlink(missing_ok=True)
    with SQLiteStore(ref, snapshot_every=every) as store:
        _commit_all(store, revisions)
        hashes = [store.revision_hash("s", r.rev) for r in revisions]
    with SQLiteStore(ref) as store:
        for rev in data.draw(st.permutations(range(len(revisions)))):
            store.clear_cache()
            got = store.get("s", rev)
            assert got == revisions[rev]
            assert _dump(got) == _dump(revisions[rev])  # key order and JSON types too
    # A writer that starts from a cold read (head decoded by the read path, field bytes
    # serialised only when the commit needs them) must chain the very same hashes.
    cut = data.draw(st.integers(0, len(revisions) - 1))
    with SQLiteStore(cold, snapshot_every=every) as store:
        _commit_all(store, revisions[: cut + 1])
    with SQLiteStore(cold, snapshot_every=every) as store:
        assert store.head("s") == revisions[cut]
        _commit_all(store, revisions, cut + 1)
        assert [store.revision_hash("s", r.rev) for r in revisions] == hashes
        assert fsck(store).ok


def test_a_rich_state_reads_back_cold_at_every_distance_from_its_snapshot(
        tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    state = rich_state("s")
    revisions = [make_revision("s", 0, state)]
    for rev in range(1, 12):
        state = state.model_copy(update={
            "steps": [*state.steps, {"n": rev, "text": f"{rev} " + "long " * 80}],
            "memory": {**state.memory, f"k{rev}": rev}, "rounds": rev})
        revisions.append(make_revision("s", rev, state, envelope={"d": {"steps": state.steps}}))
    with SQLiteStore(db) as store:
        _commit_all(store, revisions)
    with SQLiteStore(db) as store:
        for revision in revisions:
            store.clear_cache()
            assert _dump(store.get("s", revision.rev)) == _dump(revision)


@pytest.fixture
def grown(tmp_path: Path) -> Path:
    """Two sessions of 20 revisions each, in one file."""
    db = tmp_path / "g.db"
    with SQLiteStore(db) as store:
        for sid in ("a", "b"):
            state = make_state(sid)
            store.create(make_revision(sid, 0, state))
            for rev in range(1, 21):
                state = state.model_copy(update={"rounds": rev,
                                                 "steps": [*state.steps, {"n": rev}]})
                store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)
    return db


def test_revisions_outside_the_session_are_unknown(grown: Path) -> None:
    with SQLiteStore(grown) as store:
        for rev in (-1, 21, 1 << 32, (1 << 32) + 3):  # 2**32 would be b's revision 0
            with pytest.raises(UnknownRevision):
                store.get("a", rev)
        assert store.get("b", 0).sid == "b"


@pytest.mark.parametrize(("statement", "rev"), [
    ("DELETE FROM st_revisions WHERE k = ?", 12),  # a gap between snapshot and target
    ("UPDATE st_revisions SET kind = 1 WHERE k = ?", 8),  # the snapshot is gone
    ("UPDATE st_revisions SET kind = -1 WHERE k = ?", 12),  # an unknown row kind
    ("UPDATE st_revisions SET kind = 'x' WHERE k = ?", 12),
    ("UPDATE st_revisions SET body = CAST('{\"rounds\": [5]}' AS BLOB) WHERE k = ?", 12),
    ("UPDATE st_revisions SET body = CAST('{\"nope\": [0, 1]}' AS BLOB) WHERE k = ?", 12),
    ("UPDATE st_revisions SET body = CAST('{\"steps\"' AS BLOB) WHERE k = ?", 12),
    ("UPDATE st_revisions SET body = CAST('{\"sid\": \"a\"}' AS BLOB) WHERE k = ?", 8),
    ("UPDATE st_revisions SET body = CAST('[\"a\", 1]' AS BLOB) WHERE k = ?", 8),  # too short
    ("UPDATE st_revisions SET body = CAST('[]' AS BLOB) WHERE k = ?", 8),
    ("UPDATE st_revisions SET extra = CAST('{}' AS BLOB) WHERE k = ?", 13),
    ("UPDATE st_revisions SET hash = 'text' WHERE k = ?", 13),
    # The read parses every body of the chain in one call: a body holding two JSON
    # values (or a fragment that would join with its neighbour) must not shift the rest.
    ("UPDATE st_revisions SET body = CAST('{\"rounds\": [0, 12]}, {}' AS BLOB) WHERE k = ?",
     12),
    ("UPDATE st_revisions SET body = CAST('{\"rounds\": [0, 12]}, ' AS BLOB) WHERE k = ?", 12),
    ("UPDATE st_revisions SET extra = CAST('[null, []], 1' AS BLOB) WHERE k = ?", 13),
    ("UPDATE st_revisions SET extra = CAST('[null, []' AS BLOB) WHERE k = ?", 13),
])
def test_a_damaged_chain_is_a_corrupt_store_not_wrong_data(
        grown: Path, statement: str, rev: int) -> None:
    assert _sql(grown, "SELECT count(*) FROM st_revisions WHERE k = ?", (1 << 32) + rev)
    with closing(sqlite3.connect(grown)) as conn, conn:
        conn.execute(statement, ((1 << 32) + rev,))
    with SQLiteStore(grown) as store:
        with pytest.raises(CorruptStore) as info:
            store.get("a", 13)
        assert info.value.code == "STORE_CORRUPT"
        assert store.get("b", 13).state.rounds == 13  # the other session is untouched
        assert not fsck(store).ok


def test_small_snapshots_stay_raw_arrays_and_large_ones_are_packed(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    small = make_state("a")
    large = make_state("b", memory={f"key{i}": f"value {i}" for i in range(120)})
    with SQLiteStore(db) as store:
        for state in (small, large):
            store.create(make_revision(state.sid, 0, state))
        store.commit(make_revision("a", 1, small.model_copy(update={"rounds": 1})),
                     expected_rev=0)
    rows = [(kind, bytes(b)) for kind, b in
            _sql(db, "SELECT kind, body FROM st_revisions ORDER BY k")]
    # A small state's snapshot is an array of its field values, under 1 KB: stored as it
    # is (nothing to inflate), and shorter than the named form would be even packed. A
    # large one is packed; a delta of a few bytes stays raw JSON (kind 2, BASED: its
    # parent is the snapshot).
    assert [(kind, body[:1]) for kind, body in rows] == [(0, b"["), (2, b"{"), (0, b"x")]
    named = orjson.dumps(dict(zip(STATE_FIELDS, orjson.loads(rows[0][1]), strict=True)))
    assert len(rows[0][1]) < len(zlib.compress(named, 1))
    with SQLiteStore(db) as store:
        assert store.get("a", 0).state == small
        assert store.get("a", 1).state.rounds == 1
        assert store.get("b", 0).state == large


def test_a_growing_small_dict_stores_only_the_keys_that_changed(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    state = make_state("s")
    revisions = [make_revision("s", 0, state)]
    for rev in range(1, 8):  # memory grows to ~200 bytes: small, stored in the row
        state = state.model_copy(update={"memory": {**state.memory, "n": rev,
                                                    f"key{rev}": rev * 1000}})
        revisions.append(make_revision("s", rev, state))
    with SQLiteStore(db) as store:
        _commit_all(store, revisions)
    bodies = [orjson.loads(b) for (b,) in _sql(db, "SELECT body FROM st_revisions WHERE kind > 0")]
    assert bodies[0] == {"memory": [0, {"n": 1, "key1": 1000}]}  # too small to diff
    assert bodies[-1] == {"memory": [2, {"n": 7, "key7": 7000}, []]}
    with SQLiteStore(db) as store:
        assert store.compact().rewritten == 0  # compact picks the same ops
        store.clear_cache()
        assert list(store.history("s")) == revisions
        assert store.get("s", 7) == revisions[7]


def test_the_default_interval_bounds_a_read_to_seven_deltas(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    state = make_state("s")
    with SQLiteStore(db) as store:
        assert store.snapshot_every == 8
        store.create(make_revision("s", 0, state))
        for rev in range(1, 40):
            state = state.model_copy(update={"rounds": rev})
            store.commit(make_revision("s", rev, state), expected_rev=rev - 1)
    kinds = [k for (k,) in _sql(db, "SELECT kind FROM st_revisions ORDER BY k")]
    assert [rev for rev, kind in enumerate(kinds) if kind == 0] == [0, 8, 16, 24, 32]


def test_reads_stay_exact_when_the_state_changes_shape(tmp_path: Path) -> None:
    """Keys dropped and re-added, a dict turning into a list and back, a None verdict."""
    db = tmp_path / "x.db"
    shapes: list[dict[str, Any]] = [
        {"memory": {"a": 1, "b": "x" * 70}}, {"memory": {"b": "x" * 70, "c": 2}},
        {"memory": {"c": 2, "b": "x" * 70}}, {"verdict": {"label": "S"}}, {"verdict": None},
        {"config": {"k": [1, 2]}}, {"config": {"k": {"x": 1}}}, {"memory": {}},
    ]
    state: SessionState = make_state("s")
    revisions = [make_revision("s", 0, state)]
    for rev, update in enumerate(shapes, start=1):
        state = state.model_copy(update=update)
        revisions.append(make_revision("s", rev, state))
    with SQLiteStore(db, snapshot_every=16) as store:
        _commit_all(store, revisions)
    with SQLiteStore(db) as store:
        for revision in revisions:
            store.clear_cache()
            assert _dump(store.get("s", revision.rev)) == _dump(revision)


def test_a_schema_2_file_with_named_snapshots_reads_verifies_and_upgrades(
        tmp_path: Path) -> None:
    """Schema 2 wrote snapshots as objects keyed by field name: such a file reads the
    same revisions and hashes, passes fsck and takes commits, forks and compaction after
    its first writable open marks it version 4."""
    db = tmp_path / "v2.db"
    revisions = [make_revision("s", 0, rich_state("s"))]
    for rev in range(1, 20):
        state = revisions[-1].state.model_copy(update={"rounds": rev, "memory": {"n": rev}})
        revisions.append(make_revision("s", rev, state))
    with SQLiteStore(db, snapshot_every=4) as store:
        _commit_all(store, revisions)
        hashes = [store.revision_hash("s", r) for r in range(20)]
    conn = sqlite3.connect(db, isolation_level=None)
    for k, body in conn.execute("SELECT k, body FROM st_revisions WHERE kind = 0").fetchall():
        values = orjson.loads(unpack_row(body))
        named = orjson.dumps(dict(zip(STATE_FIELDS, values, strict=True)))
        conn.execute("UPDATE st_revisions SET body = ? WHERE k = ?", (pack_row(named), k))
    conn.execute("UPDATE st_meta SET value = '2' WHERE key = 'schema'")
    conn.close()
    with SQLiteStore(db, readonly=True) as store:
        assert list(store.history("s")) == revisions
        assert store.get("s", 19) == revisions[19] and fsck(store).ok
    assert _sql(db, "SELECT value FROM st_meta WHERE key = 'schema'") == [("2",)]
    with SQLiteStore(db, snapshot_every=4) as store:
        assert [store.revision_hash("s", r) for r in range(20)] == hashes
        store.fork("s", 13, "f")
        assert store.get("f", 13).state == revisions[13].state.model_copy(update={"sid": "f"})
        store.compact()
        store.clear_cache()
        assert list(store.history("s")) == revisions and fsck(store).ok
    assert _sql(db, "SELECT value FROM st_meta WHERE key = 'schema'") == [(SCHEMA_VERSION,)]
    # compact rewrote the named snapshots as arrays
    assert {unpack_row(bytes(b))[:1] for (b,) in
            _sql(db, "SELECT body FROM st_revisions WHERE kind = 0")} == {b"["}


def _set_only(store: SQLiteStore, sid: str, n: int, **fields: Any) -> list[Revision]:
    """``sid`` with ``n`` steps that set ``rounds`` and ``memory`` whole: every row based."""
    state = make_state(sid, **fields)
    out = [store.create(make_revision(sid, 0, state))]
    for rev in range(1, n + 1):
        state = state.model_copy(update={"rounds": rev, "memory": {"n": rev}})
        out.append(store.commit(make_revision(sid, rev, state), expected_rev=rev - 1))
    return out


@pytest.mark.parametrize(("fields", "first"), [
    ({}, b"["),
    ({"pages": {f"u{i}": {"text": f"{i} " * 400} for i in range(3)}}, b"["),  # blob refs
    ({"subclaims": [{"t": f"claim part {i}"} for i in range(80)]}, b"x"),  # packed
])
def test_a_based_row_reads_from_its_snapshot_alone(
        tmp_path: Path, fields: dict[str, Any], first: bytes) -> None:
    """Rows whose ops set every field changed since the snapshot whole are marked with
    their distance to it (kind 1 + d) and read from the snapshot and themselves (with a
    packed snapshot, through the chain)."""
    db = tmp_path / "b.db"
    with SQLiteStore(db) as store:
        revisions = _set_only(store, "s", 20, **fields)
    kinds = [k for (k,) in _sql(db, "SELECT kind FROM st_revisions ORDER BY k")]
    assert kinds == [0 if rev % 8 == 0 else 1 + rev % 8 for rev in range(21)]
    assert {bytes(b)[:1] for (b,) in _sql(db, "SELECT body FROM st_revisions WHERE kind = 0")
            } == {first}
    with SQLiteStore(db) as store:
        for rev in range(21):
            store.clear_cache()
            assert store.get("s", rev) == revisions[rev]
        # A commit after a cold read of a based row keeps marking (and chaining) rows.
        store.clear_cache()
        more = make_revision("s", 21, revisions[20].state.model_copy(
            update={"rounds": 21, "memory": {"n": 21}}))
        store.commit(more, expected_rev=20)
        store.clear_cache()
        assert store.get("s", 21) == more and fsck(store).ok
    # (Read through the chain, revision 20 does not say what changed since its snapshot:
    # the next row is a plain delta, which is always right.)
    based = 6 if first == b"[" else 1
    assert _sql(db, "SELECT kind FROM st_revisions WHERE k = ?", (1 << 32) + 21) == [(based,)]


def test_a_based_mark_is_checked_by_fsck_and_inert_without_its_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        revisions = _set_only(store, "s", 12)
        grown = [store.create(make_revision("g", 0, make_state("g")))]
        for rev in range(1, 13):  # steps appended: plain deltas but after a snapshot
            state = grown[-1].state.model_copy(update={"steps": [*grown[-1].state.steps,
                                                                 {"n": rev}]})
            grown.append(store.commit(make_revision("g", rev, state), expected_rev=rev - 1))
    # A mark naming a row that is no snapshot: the read walks the chain, data as committed.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET kind = 3 WHERE k = ?", ((1 << 32) + 12,))
    with SQLiteStore(db) as store:
        assert store.get("s", 12) == revisions[12] and fsck(store).ok
    # A mark naming a snapshot its ops do not turn into the revision: fsck finds it.
    assert _sql(db, "SELECT kind FROM st_revisions WHERE k = ?", (2 << 32) + 11) == [(1,)]
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET kind = 4 WHERE k = ?", ((2 << 32) + 11,))
    with SQLiteStore(db) as store:
        report = fsck(store)
    assert not report.ok
