"""The session-catalog part of the store contract suite (:mod:`claimfsm.state.contract` mixes it
in, so every backend passes it): listing newest first, keyset paging that visits each
session once, filters, and a verdict that follows commits, rewinds and forks; and pages
of one session's history, each exactly the slice of the whole history, across snapshot
boundaries, cold or cached, with the session's count and the next page's start."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from claimfsm._base.errors import BadInput
from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.errors import UnknownSession
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["CatalogContract", "HistoryContract"]


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

    def test_a_forks_own_revision_is_its_last_update(self, store: StateStore) -> None:
        # What the engine's fork does (claimfsm.engine.lineage): copy, then commit one
        # revision of its own, stamped later, carrying the link in its runtime. Every
        # backend keeps it as any revision; the parent is untouched.
        done = self._session(store, "p", "Honey never spoils.", verdict="SUPPORTS")
        head = store.fork("p", 1, "p-fork")
        link = {"sid": "p", "rev": 1, "at": "2026-02-02T00:00:00Z"}
        state = head.state.model_copy(update={"runtime": {"forked_from": link}})
        mark = Revision(sid="p-fork", rev=2, parent_rev=1, fsm=head.fsm, skill=None,
                        envelope=None, state=state, ts=link["at"],
                        events=[{"type": "Forked", "from": {"sid": "p", "rev": 1},
                                 "changes": []}])
        store.commit(mark, expected_rev=1)
        again = self.reopened(store)
        got = {s.sid: s for s in again.summaries(SummaryQuery()).items}
        assert got["p-fork"].updated == link["at"] and got["p-fork"].revisions == 3
        assert got["p"].revisions == 3 and got["p"].verdict == "SUPPORTS"
        assert again.heads(["p-fork"])["p-fork"].state.runtime == {"forked_from": link}
        assert [r.ts for r in again.history("p-fork")][-1] == link["at"]
        assert again.head("p").state == done and again.verify_chain("p-fork").ok

    def test_query_bounds_are_checked(self) -> None:
        with pytest.raises(ValueError, match="limit"):
            SummaryQuery(limit=0)


_BIG = "a value long enough to be kept as a blob by the stores that keep blobs " * 80


def _logged(sid: str, rev: int, state: SessionState) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None if rev == 0 else "step", envelope={"s": "ok", "n": rev},
                    state=state, ts=f"2026-01-01T00:02:{rev % 60:02d}Z",
                    events=[{"type": "Step", "n": rev}])


def _dump(revisions: Any) -> bytes:
    return orjson.dumps([r.model_dump(mode="json") for r in revisions])


class HistoryContract:
    """Mixed into :class:`claimfsm.state.contract.StoreContract`."""

    def reopened(self, store: StateStore) -> StateStore:
        return store

    def _grown(self, store: StateStore, sid: str, n: int) -> list[Revision]:
        """Revisions ``0..n`` of ``sid``, each changing the state (appends, a replaced
        value, now and then a large one)."""
        state = SessionState(sid=sid, claim="Sea levels are rising.", fsm="PARSE_CLAIM")
        revisions = [store.create(_logged(sid, 0, state))]
        for rev in range(1, n + 1):
            state = state.model_copy(update={
                "fsm": "RETRIEVAL", "rounds": rev, "steps": [*state.steps, {"n": rev}],
                "memory": {**state.memory, f"k{rev % 3}": _BIG if rev % 7 == 0 else rev}})
            revisions.append(store.commit(_logged(sid, rev, state), expected_rev=rev - 1))
        return revisions

    def test_a_history_page_is_the_slice_of_the_history(self, store: StateStore) -> None:
        revisions = self._grown(store, "h", 40)  # crosses several snapshot boundaries
        for view in (self.reopened(store), store):
            for start, limit in ((0, 1), (0, 41), (0, 100), (7, 9), (16, 1), (15, 2), (17, 8),
                                 (33, 8), (40, 1), (40, 5), (39, 100)):
                page = view.history_page("h", start, limit)
                assert _dump(page.items) == _dump(revisions[start: start + limit]), (start, limit)
                assert page.total == 41
                assert page.next == (start + limit if start + limit <= 40 else None)

    def test_pages_walked_by_next_give_the_whole_history_once(self, store: StateStore) -> None:
        revisions = self._grown(store, "w", 25)
        view = self.reopened(store)
        seen: list[Revision] = []
        start: int | None = 0
        while start is not None:
            page = view.history_page("w", start, 4)
            seen.extend(page.items)
            start = page.next
        assert _dump(seen) == _dump(revisions)

    def test_a_page_past_the_head_is_empty(self, store: StateStore) -> None:
        self._grown(store, "e", 3)
        page = self.reopened(store).history_page("e", 4, 10)
        assert list(page.items) == [] and page.total == 4 and page.next is None

    def test_a_page_follows_new_commits(self, store: StateStore) -> None:
        revisions = self._grown(store, "g", 5)
        assert self.reopened(store).history_page("g", 3, 10).next is None
        state = revisions[-1].state.model_copy(update={"rounds": 99})
        store.commit(_logged("g", 6, state), expected_rev=5)
        page = self.reopened(store).history_page("g", 3, 10)
        assert [r.rev for r in page.items] == [3, 4, 5, 6] and page.total == 7

    def test_a_page_of_an_unknown_session(self, store: StateStore) -> None:
        with pytest.raises(UnknownSession):
            store.history_page("nope", 0, 10)

    @pytest.mark.parametrize("start,limit,field", [(-1, 10, "start"), (0, 0, "limit"),
                                                   (0, -5, "limit")])
    def test_a_page_no_session_has_is_bad_input(self, store: StateStore, start: int, limit: int,
                                                field: str) -> None:
        self._grown(store, "b", 2)
        with pytest.raises(BadInput) as info:
            store.history_page("b", start, limit)
        assert info.value.code == "BAD_INPUT" and info.value.field == field
