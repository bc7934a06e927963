"""The session-catalog part of the store contract suite (:mod:`claimfsm.state.contract` mixes it
in, so every backend passes it): listing newest first, keyset paging that visits each
session once, filters, and a verdict that follows commits, rewinds and forks."""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["CatalogContract"]


def _rev(sid: str, rev: int, state: SessionState) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None if rev == 0 else "step", envelope=None, state=state,
                    ts=f"2026-01-01T00:01:{rev % 60:02d}Z", events=[])


class CatalogContract:
    """Mixed into :class:`claimfsm.state.contract.StoreContract`."""

    def reopened(self, store: StateStore) -> StateStore:
        return store

    def _session(self, store: StateStore, sid: str, claim: str, *, verdict: str | None = None,
                 steps: int = 1) -> SessionState:
        state = SessionState(sid=sid, claim=claim, fsm="PARSE_CLAIM")
        store.create(_rev(sid, 0, state))
        for rev in range(1, steps + 1):
            state = state.model_copy(update={"fsm": "RETRIEVAL", "rounds": rev})
            store.commit(_rev(sid, rev, state), expected_rev=rev - 1)
        if verdict is not None:
            state = state.model_copy(update={"fsm": "DONE",
                                             "verdict": {"label": verdict, "reasons": []}})
            store.commit(_rev(sid, steps + 1, state), expected_rev=steps)
        return state

    def test_summaries_newest_first_with_heads(self, store: StateStore) -> None:
        self._session(store, "a", "Sea levels are rising.", steps=2)
        self._session(store, "b", "The Moon is made of cheese.", verdict="REFUTES")
        page = self.reopened(store).summaries(SummaryQuery())
        assert [s.sid for s in page.items] == ["b", "a"] and page.next is None
        b, a = page.items
        assert (b.claim, b.fsm, b.verdict, b.revisions) == (
            "The Moon is made of cheese.", "DONE", "REFUTES", 3)
        assert (a.fsm, a.verdict, a.revisions, a.updated) == (
            "RETRIEVAL", None, 3, "2026-01-01T00:01:02Z")

    def test_keyset_paging_visits_every_session_once(self, store: StateStore) -> None:
        for i in range(23):
            self._session(store, f"s{i:02d}", f"claim number {i}", steps=0)
        seen: list[str] = []
        cursor = None
        while True:
            page = store.summaries(SummaryQuery(limit=5, before=cursor))
            assert len(page.items) <= 5
            seen += [s.sid for s in page.items]
            if page.next is None:
                break
            cursor = page.next
        assert seen == [f"s{i:02d}" for i in reversed(range(23))]

    def test_filters(self, store: StateStore) -> None:
        self._session(store, "x1", "Glaciers are melting fast.", verdict="SUPPORTS")
        self._session(store, "x2", "Coral reefs 100% fine", verdict="REFUTES")
        self._session(store, "x3", "glaciers grow in summer", steps=1)
        def names(**kw: Any) -> list[str]:
            return [s.sid for s in store.summaries(SummaryQuery(**kw)).items]

        assert names(q="GLACIERS") == ["x3", "x1"]
        assert names(q="100%") == ["x2"] and names(q="_") == []
        assert names(verdict="REFUTES") == ["x2"]
        assert names(verdict="none") == ["x3"]
        assert names(fsm="DONE") == ["x2", "x1"]
        assert names(fsm="DONE", q="glacier") == ["x1"]
        assert names(fsm="DONE", limit=1) == ["x2"]

    def test_verdict_follows_rewind_and_fork(self, store: StateStore) -> None:
        done = self._session(store, "v", "Water boils at 100 C at sea level.", verdict="SUPPORTS")
        store.fork("v", 2, "v-fork")
        store.fork("v", 1, "v-early")
        back = done.model_copy(update={"fsm": "RETRIEVAL", "verdict": None})
        store.commit(_rev("v", 3, back), expected_rev=2)
        got = {s.sid: s for s in self.reopened(store).summaries(SummaryQuery()).items}
        assert got["v"].verdict is None and got["v"].revisions == 4
        assert got["v-fork"].verdict == "SUPPORTS" and got["v-fork"].fsm == "DONE"
        assert got["v-early"].verdict is None
        assert got["v-fork"].claim == "Water boils at 100 C at sea level."

    def test_query_bounds_are_checked(self) -> None:
        with pytest.raises(ValueError, match="limit"):
            SummaryQuery(limit=0)
