"""SQLite schema 6: an envelope's ``d`` value that is the new state's own object is stored
as a reference to it (``claimfsm.state.envref``). Reads return the envelope committed,
the revision hash is the one the canonical form gives, fsck follows the references, and
files of schema 5 are read as they are and upgraded by number.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimfsm.state.codec import pack_row, unpack_row
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import SCHEMA_VERSION, CorruptStore
from claimfsm.state.sqlite.rows import Entry, encode_revision
from tests.state.test_codec import json_values

NOTE = "STEP:{}:claim and queries, a note long enough that the log soon passes 256 bytes"


def _grow(steps: int, sid: str = "s", *, share: bool = True, key: str = "log",
          notes: list[Any] | None = None) -> list[Revision]:
    """A custom-machine session: each step appends a note to ``memory[key]`` and its
    envelope's ``d`` carries the new list, the very object (``share``) or an equal copy."""
    state = make_state(sid, memory={"rev": 0, key: []})
    out = [make_revision(sid, 0, state)]
    for rev in range(1, steps + 1):
        note = notes[rev - 1] if notes is not None else NOTE.format(rev)
        log = [*state.memory[key], note]
        state = state.model_copy(update={"memory": {**state.memory, "rev": rev, key: log}})
        d = {"rev": rev, key: log if share else list(log), "sp": {"rev": rev, "fsm": "S"}}
        out.append(make_revision(sid, rev, state, envelope={"s": "ok", "d": d, "e": None,
                                                            "rb": "none"},
                                 events=[{"kind": "step", "rev": rev}]))
    return out


def _commit(store: SQLiteStore, revisions: list[Revision]) -> None:
    for revision in revisions:
        if revision.rev == 0:
            store.create(revision)
        else:
            store.commit(revision, expected_rev=revision.rev - 1)


def _extras(db: Path, sid: str = "s") -> list[bytes]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT e.extra FROM st_revisions e JOIN st_sessions s"
                            " ON e.k >> 32 = s.id WHERE s.sid = ? ORDER BY e.k", (sid,))
        return [unpack_row(bytes(extra)) for (extra,) in rows]


def _canonical_hashes(revisions: list[Revision], every: int = 8) -> list[str]:
    """The hashes the code before schema 6 gave these revisions (canonical extra)."""
    parent: Entry | None = None
    out = []
    for revision in revisions:
        parent = encode_revision(revision, parent, every).entry
        out.append(parent.hash.hex())
    return out


def _same(a: Any, b: Any) -> bool:
    return orjson.dumps(a) == orjson.dumps(b) and a == b


def test_a_shared_value_is_stored_once_and_reads_back_as_committed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    revisions = _grow(12)
    with SQLiteStore(db) as store:
        _commit(store, revisions)
        hashes = [store.revision_hash("s", r) for r in range(13)]
    extras = _extras(db)
    referenced = [e for e in extras if e[:1] == b"r"]
    assert len(referenced) >= 8  # every step once the envelope passes 256 bytes
    assert all(b"\\u0000Fmemory/log" in e and NOTE.format(1).encode() not in e
               for e in referenced)
    with SQLiteStore(db, readonly=True) as store:
        for rev in (12, 5, 3):  # cold reads, then from the chain walk's cache
            store.clear_cache()
            got = store.get("s", rev)
            assert got == revisions[rev] and _same(got.envelope, revisions[rev].envelope)
            assert got.envelope is not None and got.envelope["d"]["log"] == got.state.memory["log"]
        store.clear_cache()
        assert list(store.history("s")) == revisions
        assert store.head("s") == revisions[-1]
        assert fsck(store).ok
    assert hashes == _canonical_hashes(revisions)


def test_a_value_that_is_equal_but_not_the_same_object_is_stored_whole(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    revisions = _grow(12, share=False)
    with SQLiteStore(db) as store:
        _commit(store, revisions)
        hashes = [store.revision_hash("s", r) for r in range(13)]
        store.clear_cache()
        assert list(store.history("s")) == revisions and fsck(store).ok
    assert not any(e[:1] == b"r" for e in _extras(db))
    # the same revisions with the value shared: other bytes, the same chain
    with SQLiteStore(tmp_path / "t.db") as store:
        _commit(store, _grow(12))
        assert [store.revision_hash("s", r) for r in range(13)] == hashes


def test_d_keys_that_name_no_state_value_and_state_fields(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    state = make_state("s", steps=[])
    revisions = [make_revision("s", 0, state)]
    for rev in range(1, 8):
        steps = [*state.steps, {"id": rev, "note": NOTE.format(rev)}]
        state = state.model_copy(update={"steps": steps})
        # ``steps`` is a state field (the same list); ``other`` is nothing of the state
        d = {"steps": steps, "other": [NOTE.format(rev)] * 3, "memory": state.memory}
        revisions.append(make_revision("s", rev, state, envelope={"s": "ok", "d": d}))
    with SQLiteStore(db) as store:
        _commit(store, revisions)
        store.clear_cache()
        assert list(store.history("s")) == revisions and fsck(store).ok
        store.clear_cache()
        assert store.get("s", 6) == revisions[6]
        hashes = [store.revision_hash("s", r) for r in range(8)]
    last = _extras(db)[-1]
    assert last[:1] == b"r" and b"\\u0000Fsteps" in last and last.count(b"\\u0000F") == 1
    assert hashes == _canonical_hashes(revisions)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(json_values, min_size=1, max_size=12))
def test_any_json_shared_reads_back_exactly_with_the_canonical_hash(
        tmp_path: Path, notes: list[Any]) -> None:
    """Notes of every JSON shape (NUL-led strings, blob-sized strings, nesting, floats)."""
    db = tmp_path / "h.db"
    db.unlink(missing_ok=True)
    revisions = _grow(len(notes), notes=notes)
    with SQLiteStore(db, snapshot_every=4) as store:
        _commit(store, revisions)
        hashes = [store.revision_hash("s", r) for r in range(len(revisions))]
        store.clear_cache()
        assert _same([r.model_dump() for r in store.history("s")],
                     [r.model_dump() for r in revisions])
        store.clear_cache()
        got = store.get("s", len(notes))
        assert _same(got.model_dump(), revisions[-1].model_dump())
        assert fsck(store).ok
    assert hashes == _canonical_hashes(revisions, 4)


def test_blobs_beside_a_reference_are_stored_with_the_blobs_they_name(tmp_path: Path) -> None:
    """Events and a ``d`` value stored whole hold a JSON blob that names string blobs."""
    db = tmp_path / "s.db"
    revisions = _grow(6)
    big = [{"text": f"{i} " + "evidence text " * 30, "title": f"{i}" * 200} for i in range(6)]
    for i, revision in enumerate(revisions[1:], 1):
        assert revision.envelope is not None
        envelope = {**revision.envelope, "d": {**revision.envelope["d"], "hits": big[:i]}}
        revisions[i] = revision.model_copy(update={"envelope": envelope, "events": [
            {"kind": "ToolCalls", "results": big[i - 1:]}]})
    with SQLiteStore(db) as store:
        _commit(store, revisions)
        store.clear_cache()
        assert list(store.history("s")) == revisions
        store.clear_cache()
        assert store.get("s", 5) == revisions[5] and fsck(store).ok
        assert store.compact().skipped == [] and fsck(store).ok
        store.clear_cache()
        assert list(store.history("s")) == revisions
    assert sum(e[:1] == b"r" for e in _extras(db)) == 6


def test_fork_compact_and_commits_after_a_cold_read_keep_the_references(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    revisions = _grow(14)
    with SQLiteStore(db, snapshot_every=4) as store:
        _commit(store, revisions[:10])
        store.clear_cache()
        _commit(store, revisions[10:])  # the parent comes from a cold read
        store.fork("s", 11, "f")
    with SQLiteStore(db, snapshot_every=3) as store:  # compact rewrites every chain
        assert store.compact().skipped == []
        store.clear_cache()
        assert list(store.history("s")) == revisions
        fork = store.get("f", 11)
        assert fork.envelope == revisions[11].envelope
        assert fork.state == revisions[11].state.model_copy(update={"sid": "f"})
        assert fsck(store).ok
    assert sum(e[:1] == b"r" for e in _extras(db)) >= 8


def _tamper(db: Path, rev: int, old: bytes, new: bytes) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        k, extra = conn.execute(
            "SELECT e.k, e.extra FROM st_revisions e JOIN st_sessions s ON e.k >> 32 = s.id"
            " WHERE s.sid = 's' AND e.k & 4294967295 = ?", (rev,)).fetchone()
        raw = unpack_row(bytes(extra))
        assert old in raw
        conn.execute("UPDATE st_revisions SET extra = ? WHERE k = ?",
                     (pack_row(raw.replace(old, new)), k))


@pytest.mark.parametrize(("old", "new", "problem"), [
    (b"Fmemory/log", b"Fmemory/nope", "UNDECODABLE"),  # resolves to nothing
    (b"Fmemory/log", b"Fconfig", "UNDECODABLE"),  # no list or dict there
    (b"Fmemory/log", b"Fsteps", "UNDECODABLE"),  # an empty list: never written
    (b'"rev":9', b'"rev":8', "HASH_MISMATCH"),  # the JSON beside the reference
])
def test_fsck_catches_a_broken_reference(tmp_path: Path, old: bytes, new: bytes,
                                         problem: str) -> None:
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        _commit(store, _grow(12))
    _tamper(db, 9, old, new)
    with SQLiteStore(db, readonly=True) as store:
        assert [(p.rev, p.problem) for p in fsck(store).problems] == [(9, problem)]
        if problem == "UNDECODABLE":
            store.clear_cache()
            with pytest.raises(CorruptStore):
                store.get("s", 9)
            with pytest.raises(CorruptStore):
                list(store.history("s"))


def test_a_reference_to_another_list_of_the_state_is_a_hash_mismatch(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    state = make_state("s", memory={"log": [], "copy": []})
    revisions = [make_revision("s", 0, state)]
    for rev in range(1, 10):
        log = [*state.memory["log"], NOTE.format(rev)]
        state = state.model_copy(update={"memory": {"log": log, "copy": [*log, "x"]}})
        revisions.append(make_revision("s", rev, state, envelope={"d": {"log": log}}))
    with SQLiteStore(db) as store:
        _commit(store, revisions)
    _tamper(db, 8, b"Fmemory/log", b"Fmemory/copy")
    with SQLiteStore(db, readonly=True) as store:
        assert [(p.rev, p.problem) for p in fsck(store).problems] == [(8, "HASH_MISMATCH")]


def test_a_schema_5_file_is_read_as_it_is_and_upgraded_on_a_writable_open(
        tmp_path: Path) -> None:
    db = tmp_path / "v5.db"
    revisions = _grow(16)
    canonical = _grow(16, share=False)  # what schema 5 stored: every envelope whole
    with SQLiteStore(db) as store:
        _commit(store, canonical[:10])
        hashes = [store.revision_hash("s", r) for r in range(10)]
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_meta SET value = '5' WHERE key = 'schema'")
    with SQLiteStore(db, readonly=True) as store:
        assert list(store.history("s")) == revisions[:10] and fsck(store).ok
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone() == ("5",)
    with SQLiteStore(db) as store:
        _commit(store, revisions[10:])
        assert [store.revision_hash("s", r) for r in range(10)] == hashes
        store.clear_cache()
        assert list(store.history("s")) == revisions and fsck(store).ok
        assert [store.revision_hash("s", r) for r in range(17)] == _canonical_hashes(revisions)
    extras = _extras(db)
    assert not any(e[:1] == b"r" for e in extras[:10]) and all(e[:1] == b"r" for e in extras[10:])
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone() == (
            SCHEMA_VERSION,)
