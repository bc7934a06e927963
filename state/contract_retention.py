"""The retention part of the store contract suite (:mod:`claimfsm.state.contract` mixes
it in, so every backend passes it): a deleted session is gone from every read and
listing and leaves a tombstone; its id stays taken; a stale writer cannot bring it back;
forks and sessions sharing its blobs read, list and verify exactly as before; a session
whose head moved, or that is not there, is left alone; ``ended`` lists the sessions in
final states."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.errors import RevConflict, UnknownSession
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["RetentionContract"]

AT = "2026-11-25T12:00:00+00:00"
BIG = "Erasable evidence sentence number one. " * 40


def _rev(sid: str, rev: int, state: SessionState, **fields: Any) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None if rev == 0 else "step", envelope=None, state=state,
                    ts=f"2026-01-0{1 + rev % 9}T00:00:00+00:00", events=fields.get("events", []))


def _dump(revisions: Any) -> bytes:
    return orjson.dumps([r.model_dump(mode="json") for r in revisions])


class RetentionContract:
    """Mixed into :class:`claimfsm.state.contract.StoreContract`."""

    def reopened(self, store: StateStore) -> StateStore:
        return store

    def _made(self, store: StateStore, sid: str, claim: str, steps: int = 3,
              end: str | None = "DONE") -> list[Revision]:
        """A session with a big shared page, ``steps`` steps, then (``end``) a final state."""
        state = SessionState(sid=sid, claim=claim, fsm="PARSE_CLAIM",
                             pages={"https://example.org/p": {"text": BIG}})
        out = [store.create(_rev(sid, 0, state))]
        for rev in range(1, steps + 1):
            state = state.model_copy(update={"fsm": "RETRIEVAL", "rounds": rev,
                                             "memory": {"claim": claim, "n": rev}})
            events = [{"type": "ToolCalls", "text": f"{claim} {rev}"}]
            out.append(store.commit(_rev(sid, rev, state, events=events), expected_rev=rev - 1))
        if end is not None:
            state = state.model_copy(update={"fsm": end})
            out.append(store.commit(_rev(sid, steps + 1, state), expected_rev=steps))
        return out

    def test_delete_leaves_a_tombstone_and_nothing_else(self, store: StateStore) -> None:
        self._made(store, "keep", "Glaciers are retreating.")
        gone = self._made(store, "gone", "A claim to forget.")
        last_hash = _hash(store, "gone", gone[-1].rev)
        stone = store.delete("gone", actor="alice", at=AT)
        assert (stone.sid, stone.actor, stone.deleted_at, stone.head, stone.fsm) == (
            "gone", "alice", AT, gone[-1].rev, "DONE")
        assert stone.last_hash == last_hash
        for view in (store, self.reopened(store)):
            for name, args in (("head", ("gone",)), ("get", ("gone", 0)),
                               ("history", ("gone",)), ("verify_chain", ("gone",)),
                               ("fork", ("gone", 0, "again"))):
                with pytest.raises(UnknownSession):
                    getattr(view, name)(*args)
            assert list(view.sessions()) == ["keep"]
            assert [s.sid for s in view.summaries(SummaryQuery()).items] == ["keep"]
            assert [t.sid for t in view.tombstones()] == ["gone"]
            assert view.tombstones()[0] == stone
            assert view.verify_chain("keep").ok

    def test_delete_of_an_unknown_session_changes_nothing(self, store: StateStore) -> None:
        kept = self._made(store, "keep", "Glaciers are retreating.")
        with pytest.raises(UnknownSession):
            store.delete("nope", actor="alice", at=AT)
        store.delete("keep", actor="alice", at=AT)
        with pytest.raises(UnknownSession):
            store.delete("keep", actor="bob", at=AT)  # a second delete finds nothing
        assert [t.actor for t in store.tombstones()] == ["alice"]
        assert kept[-1].rev == store.tombstones()[0].head

    def test_a_deleted_id_stays_taken(self, store: StateStore) -> None:
        self._made(store, "gone", "A claim to forget.")
        self._made(store, "other", "Another claim.")
        store.delete("gone", actor="alice", at=AT)
        fresh = SessionState(sid="gone", claim="reused", fsm="PARSE_CLAIM")
        with pytest.raises(RevConflict):
            store.create(_rev("gone", 0, fresh))
        with pytest.raises(RevConflict):
            store.fork("other", 1, "gone")
        assert list(self.reopened(store).sessions()) == ["other"]

    def test_a_stale_writer_cannot_bring_a_deleted_session_back(self, store: StateStore) -> None:
        revisions = self._made(store, "gone", "A claim to forget.", end=None)
        view = self.reopened(store)
        assert view.head("gone") == revisions[-1]  # the view now holds it in its caches
        store.delete("gone", actor="alice", at=AT)
        state = revisions[-1].state.model_copy(update={"rounds": 99})
        with pytest.raises(UnknownSession):
            view.commit(_rev("gone", len(revisions), state), expected_rev=len(revisions) - 1)
        with pytest.raises(UnknownSession):
            store.head("gone")
        assert list(store.sessions()) == []

    def test_forks_and_shared_blobs_survive_the_parent(self, store: StateStore) -> None:
        self._made(store, "parent", "A claim to forget.")
        store.fork("parent", 2, "child")
        self._made(store, "cousin", "Same page, other claim.")  # shares the page blob
        before = {sid: _dump(self.reopened(store).history(sid)) for sid in ("child", "cousin")}
        report = store.erase({"parent": None}, actor="alice", at=AT)
        assert [t.sid for t in report.tombstones] == ["parent"] and not report.skipped
        for view in (store, self.reopened(store)):
            assert list(view.sessions()) == ["child", "cousin"]
            for sid, dumped in before.items():
                assert _dump(view.history(sid)) == dumped
                assert view.verify_chain(sid).ok
            assert view.get("child", 2).state.pages["https://example.org/p"]["text"] == BIG

    def test_erase_leaves_moved_and_missing_sessions_alone(self, store: StateStore) -> None:
        a = self._made(store, "a", "First.")
        b = self._made(store, "b", "Second.")
        report = store.erase({"a": a[-1].rev - 1, "b": b[-1].rev, "nope": None},
                             actor="janitor", at=AT)
        assert [t.sid for t in report.tombstones] == ["b"]
        assert report.skipped == {"a": "moved", "nope": "gone"}
        assert list(self.reopened(store).sessions()) == ["a"]
        assert _dump(self.reopened(store).history("a")) == _dump(a)

    def test_ended_lists_live_sessions_in_final_states(self, store: StateStore) -> None:
        self._made(store, "done", "One.", end="DONE")
        self._made(store, "open", "Two.", end=None)
        failed = self._made(store, "failed", "Three.", steps=1, end="FAILED")
        self._made(store, "gone", "Four.", end="DONE")
        store.delete("gone", actor="alice", at=AT)
        got = list(self.reopened(store).ended({"DONE", "FAILED"}))
        assert [(e.sid, e.fsm) for e in got] == [("done", "DONE"), ("failed", "FAILED")]
        assert (got[1].head, got[1].ts) == (failed[-1].rev, failed[-1].ts)
        assert list(store.ended({"WAITING"})) == []

    def test_a_sweep_after_batches_keeps_what_others_use(self, store: StateStore) -> None:
        self._made(store, "a", "First.")
        self._made(store, "b", "Second.")
        store.erase({"a": None}, actor="janitor", at=AT, sweep=False)
        store.sweep_blobs()
        view = self.reopened(store)
        assert view.get("b", 2).state.pages["https://example.org/p"]["text"] == BIG
        assert view.verify_chain("b").ok


def _hash(store: StateStore, sid: str, rev: int) -> str | None:
    """The stored chain hash, for stores that keep one."""
    stored = getattr(store, "revision_hash", None)
    return None if stored is None else str(stored(sid, rev))
