"""The store contract's part for holds and timers (:mod:`claimfsm.state.holds`): every
backend lists the sessions due at a time, earliest first, follows a commit that starts or
ends a wait or a retry, copies a timer with a fork, and lists a holding session as
``WAITING``. Mixed into :class:`claimfsm.state.contract.StoreContract`."""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.model import RetryState, Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["TimerContract"]

_NOW = "2026-06-01T12:00:00.000000"


def _state(sid: str, *, fsm: str = "RETRIEVAL", retry_at: str | None = None,
           until: str | None = None, hold: bool = False) -> SessionState:
    runtime: dict[str, Any] = {}
    if hold or until:
        runtime["hold"] = {"kind": "input", "state": fsm, "input": "X", "since": _NOW,
                           "until": until, "on_timeout": "DONE" if until else None}
    retry = RetryState(state=fsm, attempts=1, next_at=retry_at) if retry_at else None
    return SessionState(sid=sid, claim="c", fsm=fsm, retry=retry, runtime=runtime)


def _rev(sid: str, rev: int, state: SessionState) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None, envelope=None, state=state, ts=f"2026-01-01T00:00:0{rev}Z")


class TimerContract:
    """Timer and hold checks every backend passes."""

    def test_due_lists_passed_deadlines_and_retries_earliest_first(
            self, store: StateStore) -> None:
        store.create(_rev("plain", 0, _state("plain")))
        store.create(_rev("late", 0, _state("late", retry_at="2026-06-01T11:00:00+00:00")))
        store.create(_rev("early", 0, _state("early", until="2026-06-01T10:00:00Z")))
        store.create(_rev("future", 0, _state("future", retry_at="2026-06-02T00:00:00Z")))
        store.create(_rev("held", 0, _state("held", hold=True)))
        assert store.due(_NOW) == ["early", "late"]
        assert store.due(_NOW, limit=1) == ["early"]
        assert store.due("2026-06-03T00:00:00.000000") == ["early", "late", "future"]

    def test_a_commit_moves_the_timer(self, store: StateStore) -> None:
        store.create(_rev("s", 0, _state("s")))
        assert store.due(_NOW) == []
        store.commit(_rev("s", 1, _state("s", retry_at="2026-06-01T11:00:00Z")),
                     expected_rev=0)
        assert store.due(_NOW) == ["s"]
        store.commit(_rev("s", 2, _state("s", retry_at="2026-06-01T13:00:00Z")),
                     expected_rev=1)
        assert store.due(_NOW) == []
        store.commit(_rev("s", 3, _state("s", until="2026-06-01T11:30:00Z")), expected_rev=2)
        assert store.due(_NOW) == ["s"]
        store.commit(_rev("s", 4, _state("s")), expected_rev=3)
        assert store.due(_NOW) == [] and store.due("9999-01-01T00:00:00.000000") == []

    def test_a_hold_in_another_state_is_no_hold(self, store: StateStore) -> None:
        stale = _state("s", until="2026-06-01T10:00:00Z").model_copy(update={"fsm": "DONE"})
        store.create(_rev("s", 0, stale))
        assert store.due(_NOW) == []

    def test_holding_sessions_list_as_waiting(self, store: StateStore) -> None:
        store.create(_rev("a", 0, _state("a")))
        store.create(_rev("b", 0, _state("b")))
        store.commit(_rev("b", 1, _state("b", hold=True)), expected_rev=0)
        page = store.summaries(SummaryQuery())
        assert {i.sid: i.status for i in page.items} == {"a": "RUNNING", "b": "WAITING"}
        waiting = store.summaries(SummaryQuery(status="WAITING"))
        assert [i.sid for i in waiting.items] == ["b"]
        store.commit(_rev("b", 2, _state("b", fsm="DONE")), expected_rev=1)
        assert store.summaries(SummaryQuery(status="WAITING")).items == []
        done = store.summaries(SummaryQuery(fsm="DONE")).items
        assert [(i.sid, i.status) for i in done] == [("b", "FINISHED")]

    def test_fork_copies_the_timer(self, store: StateStore) -> None:
        store.create(_rev("s", 0, _state("s")))
        store.commit(_rev("s", 1, _state("s", until="2026-06-01T10:00:00Z")), expected_rev=0)
        store.commit(_rev("s", 2, _state("s")), expected_rev=1)
        store.fork("s", 1, "f")
        store.fork("s", 2, "g")
        assert store.due(_NOW) == ["f"]
        assert {i.sid: i.status for i in store.summaries(SummaryQuery()).items}["f"] == "WAITING"

    def test_heads_reads_several_heads_at_once(self, store: StateStore) -> None:
        store.create(_rev("a", 0, _state("a")))
        store.create(_rev("b", 0, _state("b")))
        store.commit(_rev("b", 1, _state("b", hold=True)), expected_rev=0)
        heads = store.heads(["b", "nope", "a"])
        assert set(heads) == {"a", "b"}
        assert heads["b"] == store.head("b") and heads["a"] == store.head("a")

    def test_a_batch_lands_every_commit_but_a_lost_one(self, store: StateStore) -> None:
        from claimfsm.state.errors import RevConflict

        for sid in ("a", "b"):
            store.create(_rev(sid, 0, _state(sid)))
        with store.batch():
            store.commit(_rev("a", 1, _state("a", hold=True)), expected_rev=0)
            with pytest.raises(RevConflict):
                store.commit(_rev("b", 1, _state("b")), expected_rev=5)
            store.commit(_rev("b", 1, _state("b", until="2026-06-01T10:00:00Z")),
                         expected_rev=0)
        assert (store.head("a").rev, store.head("b").rev) == (1, 1)
        assert store.due(_NOW) == ["b"]

    def test_commit_all_lands_the_others_and_reports_the_lost_one(
            self, store: StateStore) -> None:
        from claimfsm.state.errors import RevConflict, UnknownSession

        for sid in ("a", "b", "c"):
            store.create(_rev(sid, 0, _state(sid, until="2026-06-01T10:00:00Z")))
        store.commit(_rev("b", 1, _state("b", hold=True)), expected_rev=0)  # b moved on
        done = _state("x", fsm="DONE")
        outcomes = store.commit_all([
            (_rev(sid, 1, done.model_copy(update={"sid": sid})), 0)
            for sid in ("a", "b", "c", "gone")])
        assert isinstance(outcomes[0], Revision) and isinstance(outcomes[2], Revision)
        assert isinstance(outcomes[1], RevConflict)
        assert isinstance(outcomes[3], UnknownSession)
        assert [store.head(s).fsm for s in ("a", "b", "c")] == ["DONE", "RETRIEVAL", "DONE"]
        assert store.head("b").rev == 1 and store.due(_NOW) == []
        # The next commits follow the landed ones: the caches hold what the store holds.
        store.commit(_rev("a", 2, _state("a")), expected_rev=1)
        assert store.head("a").rev == 2

    def test_a_batch_that_fails_lands_none_of_its_commits(self, store: StateStore) -> None:
        store.create(_rev("a", 0, _state("a", until="2026-06-01T10:00:00Z")))
        with pytest.raises(RuntimeError), store.batch():
            store.commit(_rev("a", 1, _state("a")), expected_rev=0)
            raise RuntimeError("killed")
        if type(store).batch is StateStore.batch:  # the default: each commit on its own
            assert store.head("a").rev == 1
            return
        assert store.head("a").rev == 0 and store.due(_NOW) == ["a"]
        store.commit(_rev("a", 1, _state("a", fsm="DONE")), expected_rev=0)
        assert store.head("a").fsm == "DONE"
