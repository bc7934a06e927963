"""The store contract's part for the review queue (:mod:`claimfsm.state.queue`): every
backend lists the sessions that wait for a person oldest first, filters them by state,
verdict and age, pages by key, and follows the commits that start and end a wait. Mixed
into :class:`claimfsm.state.contract.StoreContract`."""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm._base.errors import BadInput
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.queue import WaitingQuery
from claimfsm.state.store import StateStore

__all__ = ["QueueContract"]


def _state(sid: str, fsm: str, *, hold: bool, verdict: str | None = None,
           since: str = "2026-01-01T00:00:00.000000+00:00") -> SessionState:
    runtime: dict[str, Any] = {}
    if hold:
        runtime["hold"] = {"kind": "input", "state": fsm, "input": "ReviewInput",
                           "since": since, "until": None, "on_timeout": None}
    label = {"label": verdict, "reasons": []} if verdict else None
    return SessionState(sid=sid, claim=f"claim of {sid}", fsm=fsm, runtime=runtime,
                        verdict=label)


def _rev(sid: str, rev: int, ts: str, state: SessionState) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None, envelope=None, state=state, ts=ts)


def _waits(store: StateStore, sid: str, ts: str, fsm: str = "REVIEW",
           verdict: str | None = "SUPPORTS") -> None:
    store.create(_rev(sid, 0, "2026-01-01T00:00:00.000000+00:00",
                      _state(sid, "PARSE_CLAIM", hold=False)))
    store.commit(_rev(sid, 1, ts, _state(sid, fsm, hold=True, verdict=verdict, since=ts)),
                 expected_rev=0)


def _sids(store: StateStore, **query: Any) -> list[str]:
    return [i.sid for i in store.waiting(WaitingQuery(**query)).items]


class QueueContract:
    """Review-queue checks every backend passes."""

    def _fill(self, store: StateStore) -> None:
        store.create(_rev("busy", 0, "2026-01-01T00:00:00.000000+00:00",
                          _state("busy", "RETRIEVAL", hold=False)))
        _waits(store, "late", "2026-01-03T00:00:00.000000+00:00", verdict="REFUTES")
        _waits(store, "early", "2026-01-02T00:00:00.000000+00:00")
        _waits(store, "paused", "2026-01-02T12:00:00.000000+00:00", fsm="VERIFY",
               verdict=None)
        _waits(store, "tie", "2026-01-03T00:00:00.000000+00:00")
        store.create(_rev("done", 0, "2026-01-01T00:00:00.000000+00:00",
                          _state("done", "DONE", hold=False, verdict="SUPPORTS")))

    def test_the_queue_lists_waiting_sessions_oldest_first(self, store: StateStore) -> None:
        self._fill(store)
        page = store.waiting(WaitingQuery())
        assert [i.sid for i in page.items] == ["early", "paused", "late", "tie"]
        assert page.next is None
        late = page.items[2]
        assert (late.claim, late.fsm, late.verdict, late.revisions) == (
            "claim of late", "REVIEW", "REFUTES", 2)
        assert late.updated == "2026-01-03T00:00:00.000000+00:00"
        assert late.since == "2026-01-03T00:00:00.000000"  # UTC, as it sorts

    def test_the_queue_filters_by_state_verdict_and_age(self, store: StateStore) -> None:
        self._fill(store)
        assert _sids(store, fsm="REVIEW") == ["early", "late", "tie"]
        assert _sids(store, fsm="VERIFY") == ["paused"]
        assert _sids(store, verdict="REFUTES") == ["late"]
        assert _sids(store, verdict="none") == ["paused"]
        assert _sids(store, fsm="REVIEW", verdict="SUPPORTS") == ["early", "tie"]
        assert _sids(store, until="2026-01-02T12:00:00.000000+00:00") == ["early", "paused"]
        assert _sids(store, until="2026-01-01T00:00:00.000000+00:00") == []

    def test_the_queue_pages_by_key(self, store: StateStore) -> None:
        self._fill(store)
        seen: list[str] = []
        after = None
        while True:
            page = store.waiting(WaitingQuery(limit=1, after=after))
            seen += [i.sid for i in page.items]
            if page.next is None:
                break
            after = page.next
        assert seen == ["early", "paused", "late", "tie"]
        two = store.waiting(WaitingQuery(limit=2))
        rest = store.waiting(WaitingQuery(limit=2, after=two.next, fsm="REVIEW"))
        assert [i.sid for i in rest.items] == ["late", "tie"]

    def test_a_bad_cursor_is_refused_naming_it(self, store: StateStore) -> None:
        with pytest.raises(BadInput) as err:
            store.waiting(WaitingQuery(after="page-two"))
        assert err.value.field == "after"

    def test_the_queue_follows_the_commits(self, store: StateStore) -> None:
        _waits(store, "s", "2026-01-02T00:00:00.000000+00:00")
        assert _sids(store) == ["s"]
        store.commit(_rev("s", 2, "2026-01-02T01:00:00.000000+00:00",
                          _state("s", "DONE", hold=False, verdict="REFUTES")), expected_rev=1)
        assert _sids(store) == []
        store.fork("s", 1, "f")
        assert _sids(store) == ["f"]

    def test_an_edit_while_waiting_keeps_the_place_in_the_queue(self, store: StateStore) -> None:
        self._fill(store)
        # A person edits "early" a day later: a new head revision, the same hold.
        edited = _state("early", "REVIEW", hold=True, verdict="SUPPORTS",
                        since="2026-01-02T00:00:00.000000+00:00")
        store.commit(_rev("early", 2, "2026-01-04T00:00:00.000000+00:00", edited),
                     expected_rev=1)
        page = store.waiting(WaitingQuery())
        assert [i.sid for i in page.items] == ["early", "paused", "late", "tie"]
        assert page.items[0].updated == "2026-01-04T00:00:00.000000+00:00"
        assert _sids(store, until="2026-01-02T00:00:00Z") == ["early"]
        # A hold that begins again (sent back, then waiting anew) goes to the back.
        store.commit(_rev("early", 3, "2026-01-05T00:00:00.000000+00:00",
                          _state("early", "RETRIEVAL", hold=False)), expected_rev=2)
        again = _state("early", "REVIEW", hold=True, since="2026-01-06T00:00:00+01:00")
        store.commit(_rev("early", 4, "2026-01-06T00:00:00.000000+00:00", again),
                     expected_rev=3)
        assert _sids(store) == ["paused", "late", "tie", "early"]
        assert store.waiting(WaitingQuery()).items[-1].since == "2026-01-05T23:00:00.000000"

    def test_a_bad_age_is_refused_naming_it(self, store: StateStore) -> None:
        self._fill(store)
        with pytest.raises(BadInput) as err:
            store.waiting(WaitingQuery(until="yesterday"))
        assert err.value.field == "until"
