"""The cold read on the writer's own connection (``SQLiteStore._all``'s fast path, the
store that committed the rows): on a varied session, forks included, every revision reads
back exactly as committed, equal to what the chain walk (``history``, pages) and a
separate reader decode, and a corrupt row is still refused.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import CorruptStore

BIG = "evidence sentence, kept verbatim for the judge; " * 8  # past the blob threshold


_KEY = "(SELECT id FROM st_sessions WHERE sid = 's') * 4294967296 + 5"


def _dump(revision: Revision) -> bytes:
    return orjson.dumps(revision.model_dump(mode="json"))


def _ts(rev: int) -> str:
    # The engine's form, which a row stores packed (7 bytes) and a read formats back.
    return f"2026-11-26T11:{rev // 60:02d}:{rev % 60:02d}.{rev * 7919 % 1_000_000:06d}+00:00"


def _next(state: SessionState, rev: int) -> dict[str, Any]:
    """Rev ``rev``'s field update: based rows (fields set whole), appends, nested dict
    updates with a key dropped, blob-sized values in memory and pages, by turns."""
    turn = rev % 5
    if turn == 0:
        return {"rounds": rev, "memory": {"n": rev}}  # set whole: a based row
    if turn == 1:
        return {"steps": [*state.steps, {"n": rev, "nested": {"a": [rev, None, 1.5]}}]}
    if turn == 2:
        memory = {**state.memory, f"k{rev}": {"deep": [rev, {"x": True}]}}
        memory.pop(next(iter(memory)), None)
        return {"memory": memory}
    if turn == 3:
        return {"pages": {**state.pages, f"u{rev}": {"text": f"{rev} {BIG}"}},
                "memory": {**state.memory, "big": BIG + str(rev)}}
    return {"fsm": f"S{rev}", "entry_rev": rev, "subclaims": [{"t": f"{rev} {BIG}"}]}


def _grow(store: SQLiteStore, sid: str, state: SessionState, first: int, last: int,
          out: list[Revision]) -> None:
    for rev in range(first, last + 1):
        state = state.model_copy(update=_next(state, rev))
        out.append(store.commit(make_revision(
            sid, rev, state, ts=_ts(rev), skill="k",
            envelope={"d": {"n": rev, "text": BIG}} if rev % 2 else {"d": {"n": rev}},
            events=[{"rev": rev, "why": BIG}] if rev % 3 == 0 else []), expected_rev=rev - 1))


@pytest.mark.parametrize("every", [3, 8])
def test_cold_reads_on_the_writer_equal_the_committed_and_the_chain_walk(
        tmp_path: Path, every: int) -> None:
    db = tmp_path / "w.db"
    revisions: dict[str, list[Revision]] = {}
    with SQLiteStore(db, snapshot_every=every) as store:
        for sid in ("a", "b"):
            state = make_state(sid, memory={"a": "x" * 40})
            out = [store.create(make_revision(sid, 0, state, ts=_ts(0)))]
            _grow(store, sid, state, 1, 23, out)
            revisions[sid] = out
        # A fork at a based row and one at a plain delta, each grown on its own.
        for at, name in ((10, "fa"), (12, "fb")):
            store.fork("a", at, name)
            copy = [store.get(name, rev) for rev in range(at + 1)]
            _grow(store, name, copy[-1].state, at + 1, at + 9, copy)
            revisions[name] = copy
        kinds = {kind for (kind,) in store._read(  # the session mixes every row kind
            lambda c: c.execute("SELECT DISTINCT kind FROM st_revisions").fetchall())}
        assert {0, 1} < kinds and max(kinds) > 1
        assert store._conn is not None  # reads below take the writer's connection
        for sid, expected in revisions.items():
            for revision in expected:
                store.clear_cache()
                got = store.get(sid, revision.rev)
                assert got == revision
                assert _dump(got) == _dump(revision)  # key order and JSON types too
                assert type(got.ts) is str and got.ts == revision.ts
        cold = {}
        for sid in revisions:
            store.clear_cache()
            cold[sid] = [_dump(r) for r in store.history(sid)]
            store.clear_cache()
            page = store.history_page(sid, 5, 7)
            assert [_dump(r) for r in page.items] == cold[sid][5:12]
    with SQLiteStore(db) as reader:  # a separate reader decodes the same
        for sid, expected in revisions.items():
            assert cold[sid] == [_dump(r) for r in expected]
            for revision in expected:
                reader.clear_cache()
                assert _dump(reader.get(sid, revision.rev)) == _dump(revision)


def test_the_writer_refuses_a_damaged_row_and_reads_again_after(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with SQLiteStore(db) as store:
        state = make_state("s", memory={"n": 0})
        out = [store.create(make_revision("s", 0, state, ts=_ts(0)))]
        _grow(store, "s", state, 1, 9, out)
        with closing(sqlite3.connect(db)) as other, other:
            saved = other.execute(f"SELECT body FROM st_revisions WHERE k = {_KEY}").fetchone()[0]
            other.execute(f"UPDATE st_revisions SET body = x'5b' WHERE k = {_KEY}")
        store.clear_cache()
        with pytest.raises(CorruptStore):
            store.get("s", 5)
        with closing(sqlite3.connect(db)) as other, other:
            other.execute(f"UPDATE st_revisions SET body = ? WHERE k = {_KEY}", (saved,))
        store.clear_cache()
        assert _dump(store.get("s", 5)) == _dump(out[5])  # the cursor is still usable


@pytest.mark.parametrize("items", [
    [f"evidence {i}: {BIG[:120]}" for i in range(24)],  # a blob of JSON, no NUL-led string
    [f"\x00nul-led {i} {BIG[:100]}" for i in range(6)] + ["plain", "\x00"],  # escapes
    [{"t": BIG + str(i)} for i in range(3)] + ["\x00x", {"n": None}],  # refs inside a blob
])
def test_blobs_of_json_read_back_with_and_without_nul_led_strings(
        tmp_path: Path, items: list[Any]) -> None:
    db = tmp_path / "j.db"
    with SQLiteStore(db) as store:
        state = make_state("s", config={"queries": items}, memory={"log": items[:3]})
        out = [store.create(make_revision("s", 0, state, ts=_ts(0)))]
        for rev in range(1, 5):
            state = state.model_copy(update={"rounds": rev, "memory": {
                "log": [*state.memory["log"], f"{rev} {BIG}"], "n": rev}})
            out.append(store.commit(make_revision(
                "s", rev, state, ts=_ts(rev), envelope={"d": {"log": items}}),
                expected_rev=rev - 1))
        refs = store._read(lambda c: c.execute(
            "SELECT COUNT(*) FROM st_blobs").fetchone()[0])
        assert refs > 0
        for revision in out:
            store.clear_cache()
            got = store.get("s", revision.rev)
            assert got == revision and _dump(got) == _dump(revision)
            assert got.state.config["queries"] == items


def test_a_compact_after_cold_reads_rebuilds_the_file_and_reads_go_on(tmp_path: Path) -> None:
    """The kept cursor holds no statement open: ``VACUUM`` (which refuses to run while
    one is) rebuilds the file after cold reads on the writer's connection."""
    db = tmp_path / "c.db"
    with SQLiteStore(db) as store:
        kept: list[Revision] = []
        for sid in ("keep", "gone"):
            state = make_state(sid, memory={"n": 0})
            out = [store.create(make_revision(sid, 0, state, ts=_ts(0)))]
            _grow(store, sid, state, 1, 6, out)
            kept = kept or out
        for rev in range(7):
            store.clear_cache()
            store.get("gone", rev)
        store.delete("gone", actor="alice", at=_ts(99))
        assert store.compact().skipped == []
        for revision in kept:
            store.clear_cache()
            assert _dump(store.get("keep", revision.rev)) == _dump(revision)
