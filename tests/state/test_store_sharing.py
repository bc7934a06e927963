"""Storage that grows with what a step changed: large items shared between the state, the
envelope that produced them and other sessions; large row bodies packed with zlib; and
fsck, compact, prune and fork all working through both.
"""

from __future__ import annotations

import sqlite3
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite import SQLiteStore

SENTENCES = [{"id": f"e{i}", "text": f"Sentence {i} says the Moon landing was in 1969.",
              "score": i / 10} for i in range(12)]
HITS = [{"doc_id": f"d{i}", "title": f"Doc {i}", "snippet": "Apollo 11 landed in July 1969. " * 4}
        for i in range(8)]


def _step(store: SQLiteStore, head: Revision, state: SessionState,
          envelope: dict[str, Any] | None = None, events: list[dict[str, Any]] | None = None
          ) -> Revision:
    rev = make_revision(head.sid, head.rev + 1, state)
    rev = rev.model_copy(update={"envelope": envelope, "events": events or []})
    return store.commit(rev, expected_rev=head.rev)


def _bytes(db: Path) -> dict[str, int]:
    with closing(sqlite3.connect(db)) as conn, conn:
        body, extra = conn.execute(
            "SELECT sum(length(body)), sum(length(extra)) FROM st_revisions").fetchone()
        blobs = conn.execute("SELECT coalesce(sum(length(data)), 0) FROM st_blobs").fetchone()[0]
    return {"body": body, "extra": extra, "blobs": blobs}


def test_an_item_in_the_state_and_in_its_envelope_is_stored_once(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    size = len(orjson.dumps(SENTENCES))
    with SQLiteStore(db) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        state = head.state.model_copy(update={"evidence": {"s1": SENTENCES}})
        _step(store, head, state, envelope={"s": "ok", "d": {"evidence": {"s1": SENTENCES}},
                                            "e": None, "rb": "none"})
        got = store.get("a", 1)
    assert got.state.evidence == {"s1": SENTENCES}
    assert got.envelope is not None and got.envelope["d"]["evidence"]["s1"] == SENTENCES
    stored = _bytes(db)
    assert stored["blobs"] < size  # one copy (packed), not one per place it appears
    # the step's row (rev 0 is the empty state's snapshot)
    with closing(sqlite3.connect(db)) as conn, conn:
        (step,) = conn.execute(
            "SELECT length(body) + length(extra) FROM st_revisions WHERE kind > 0").fetchone()
    assert step < size // 2  # rows hold references only


def test_nested_results_are_shared_with_the_fields_that_repeat_them(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    hits_size = len(orjson.dumps(HITS))
    assert hits_size >= 1024
    with SQLiteStore(db) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        state = head.state.model_copy(update={
            "tool_results": [{"id": "t1", "ok": True, "value": {"hits": HITS}}],
            "outputs": {"search:1": HITS}})
        _step(store, head, state)
        again = SQLiteStore(db)
        assert again.get("a", 1).state.outputs == {"search:1": HITS}
        assert again.get("a", 1).state.tool_results[0]["value"]["hits"] == HITS
        again.close()
    with closing(sqlite3.connect(db)) as conn, conn:
        raw = [zlib.decompress(d) if z else d
               for z, d in conn.execute("SELECT z, data FROM st_blobs")]
        raw += [zlib.decompress(b) if b[:1] == b"x" else b
                for (b,) in conn.execute("SELECT body FROM st_revisions")]
    assert sum(r.count(b'"doc_id":"d0"') for r in raw) == 1  # the hits, stored once


def test_large_rows_are_packed_and_read_back_exactly(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    events = [{"type": "ToolInvoked", "tool": "search", "args": {"q": f"moon landing {i}"},
               "ok": True, "attempt": 1, "id": f"t{i}"} for i in range(12)]
    with SQLiteStore(db) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        state = head.state.model_copy(update={"memory": {f"k{i}": i for i in range(80)}})
        written = _step(store, head, state, events=events)
    with closing(sqlite3.connect(db)) as conn, conn:
        body, extra = conn.execute("SELECT body, extra FROM st_revisions WHERE k = ?",
                                   ((1 << 32) + 1,)).fetchone()
    assert body[:1] == b"x" and extra[:1] == b"x"  # zlib streams, not JSON
    assert len(extra) < len(orjson.dumps([None, events])) // 2
    with SQLiteStore(db) as store:
        got = store.get("a", 1)
        assert got == written and got.events == events
        assert fsck(store).ok


def test_a_forged_packed_row_is_caught_by_fsck(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    with SQLiteStore(db) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        for n in range(3):
            state = head.state.model_copy(update={"memory": {f"k{i}": i + n for i in range(60)}})
            head = _step(store, head, state)
    k = (1 << 32) + 2
    forged = zlib.compress(orjson.dumps({"memory": [0, {"k0": 999}]}))
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET body = ? WHERE k = ?", (forged, k))
    with SQLiteStore(db) as store:
        assert [(p.rev, p.problem) for p in fsck(store).problems] == [(2, "HASH_MISMATCH")]
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE st_revisions SET body = ? WHERE k = ?", (b"x not zlib", k))
    with SQLiteStore(db) as store:
        assert [(p.rev, p.problem) for p in fsck(store).problems] == [(2, "UNDECODABLE")]


def test_prune_keeps_blobs_referenced_only_from_packed_rows(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with SQLiteStore(db) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        envelope = {"s": "ok", "d": {"judgments": [{"id": "s1", "why": SENTENCES}]},
                    "e": None, "rb": "none"}
        _step(store, head, head.state.model_copy(update={"rounds": 1}), envelope=envelope)
        before = store.stats()["blobs"]
        assert before >= 1
        report = store.compact()
        assert report.blobs_dropped == 0 and store.stats()["blobs"] == before
    with SQLiteStore(db) as store:
        got = store.get("a", 1)
        assert got.envelope is not None and got.envelope["d"]["judgments"][0]["why"] == SENTENCES
        assert fsck(store).ok


def test_fork_and_compact_carry_packed_rows_over(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with SQLiteStore(db, snapshot_every=2) as store:
        head = store.create(make_revision("a", 0, make_state("a")))
        for n in range(5):
            state = head.state.model_copy(update={
                "memory": {**head.state.memory, f"n{n}": list(range(40))},
                "evidence": {"s1": SENTENCES[: n + 2]}})
            head = _step(store, head, state)
        store.fork("a", 4, "b")
    with SQLiteStore(db) as store:
        history = [r.model_dump(mode="json") for r in store.history("a")]
        report = store.compact()
        assert report.rewritten > 0 and not report.skipped
        store.clear_cache()
        assert [r.model_dump(mode="json") for r in store.history("a")] == history
        assert [r.state.memory for r in store.history("b")] == [
            r["state"]["memory"] for r in history[:5]]
        assert fsck(store).ok
