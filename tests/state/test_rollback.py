"""Rollback helpers over both backends: entry state (rb=state), tool slice (rb=tools)
and rewind, which builds the new head without committing it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import UnknownRevision
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import TOOL_SLICE, RetryState, SessionState
from claimfsm.state.rollback import entry_state, rewind_revision, tools_restored
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.store import StateStore
from tests.support.documented import documented_tool_slice


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    backend: StateStore = MemoryStore() if request.param == "memory" else SQLiteStore(
        tmp_path / "rb.db")
    with backend:
        yield backend


def _session(store: StateStore) -> list[SessionState]:
    """PARSE_CLAIM at 0; RETRIEVAL entered at 1; tool work at 2 and 3 (head)."""
    states = [make_state("s", plans=[{"q": "a"}])]
    states.append(states[0].model_copy(update={"fsm": "RETRIEVAL", "entry_rev": 1,
                                               "tool_requests": [{"tool": "search"}]}))
    states.append(states[1].model_copy(update={
        "tool_results": [{"ok": True}], "pages": {"u": {"text": "page"}},
        "policy": {"fetched": ["u"]}, "steps": [{"n": 1}], "followups": [{"kw": "x"}]}))
    states.append(states[2].model_copy(update={
        "tool_requests": [{"tool": "search"}, {"tool": "web_search"}],
        "steps": [{"n": 1}, {"n": 2}], "rounds": 1, "memory": {"kept": True}}))
    store.create(make_revision("s", 0, states[0]))
    for rev in range(1, 4):
        store.commit(make_revision("s", rev, states[rev]), expected_rev=rev - 1)
    return states


def test_entry_state_is_the_state_at_entry_rev(store: StateStore) -> None:
    states = _session(store)
    head = store.head("s")
    assert entry_state(store, "s", head) == states[1]
    assert store.head("s").rev == 3  # nothing committed


def test_entry_state_of_a_fresh_entry_is_the_head_state(store: StateStore) -> None:
    states = _session(store)
    moved = states[3].model_copy(update={"fsm": "EXTRACT", "entry_rev": 4})
    store.commit(make_revision("s", 4, moved), expected_rev=3)
    assert entry_state(store, "s", store.head("s")) == moved


def test_entry_rev_outside_the_chain_is_an_unknown_revision(store: StateStore) -> None:
    states = _session(store)
    broken = states[3].model_copy(update={"entry_rev": 9})
    store.commit(make_revision("s", 4, broken), expected_rev=3)
    with pytest.raises(UnknownRevision):
        entry_state(store, "s", store.head("s"))


def test_the_tool_slice_is_the_documented_one() -> None:
    assert documented_tool_slice() == TOOL_SLICE


def _every_field_moved(store: StateStore) -> tuple[SessionState, SessionState]:
    """A session whose head differs from its entry revision in every field the steps of
    one FSM state can change (so a field restored that should not be, or kept that
    should be restored, shows); ``(entry state, head state)``."""
    entry = make_state("s", fsm="RETRIEVAL", entry_rev=1, plans=[{"q": "a"}])
    head = entry.model_copy(update={
        "config": {"k": 1}, "subclaims": [{"id": "s1"}], "plans": [{"q": "b"}],
        "tool_requests": [{"tool": "search"}], "tool_results": [{"ok": True}],
        "pages": {"u": {"text": "page"}}, "policy": {"fetched": ["u"]}, "steps": [{"n": 1}],
        "outputs": {"hits": [1]}, "followups": [{"kw": "x"}], "rounds": 2,
        "evidence": {"s1": [{"id": "e1"}]}, "judgments": [{"id": "s1"}],
        "verdict": {"label": "SUPPORTS"}, "memory": {"kept": True},
        "retry": RetryState(state="RETRIEVAL", attempts=1), "error": {"code": "X", "msg": "x"},
        "runtime": {"budget": {"calls": 3}}})
    fixed = {"sid", "claim", "fsm", "entry_rev"}
    moved = {n for n in SessionState.model_fields if getattr(entry, n) != getattr(head, n)}
    assert moved == set(SessionState.model_fields) - fixed, "a field is the same in both"
    store.create(make_revision("s", 0, make_state("s")))
    store.commit(make_revision("s", 1, entry), expected_rev=0)
    store.commit(make_revision("s", 2, head), expected_rev=1)
    return entry, head


def test_tools_restored_resets_only_the_documented_tool_slice(store: StateStore) -> None:
    # The expected fields come from docs/concepts.md, never from TOOL_SLICE itself: a
    # field dropped from it or added to it fails here.
    entry, head = _every_field_moved(store)
    restored = tools_restored(store, "s", store.head("s"))
    slice_ = set(documented_tool_slice())
    for name in SessionState.model_fields:
        want = getattr(entry if name in slice_ else head, name)
        assert getattr(restored, name) == want, name
    assert restored.runtime == {"budget": {"calls": 3}}  # spent calls are never given back


def test_tools_restored_resets_only_the_tool_slice(store: StateStore) -> None:
    states = _session(store)
    restored = tools_restored(store, "s", store.head("s"))
    for name in documented_tool_slice():
        assert getattr(restored, name) == getattr(states[1], name), name
    assert restored.followups == states[3].followups  # not part of the tool slice
    assert restored.memory == {"kept": True} and restored.rounds == 1
    assert restored.fsm == "RETRIEVAL" and restored.entry_rev == 1


def test_rewind_builds_the_next_head_equal_to_the_target(store: StateStore) -> None:
    states = _session(store)
    rewind = rewind_revision(store, "s", 1, ts="2026-01-02T00:00:00Z")
    assert (rewind.rev, rewind.parent_rev, rewind.skill) == (4, 3, "rewind")
    assert rewind.envelope is None and rewind.events == [{"type": "Rewind", "to": 1}]
    assert rewind.state == states[1] and rewind.fsm == "RETRIEVAL"
    assert rewind.ts == "2026-01-02T00:00:00Z"
    assert store.head("s").rev == 3  # built, not committed
    store.commit(rewind, expected_rev=3)
    history = store.history("s")
    assert [r.rev for r in history] == [0, 1, 2, 3, 4]  # history kept
    assert history[4].state == history[1].state and history[3].state == states[3]


def test_rewind_to_an_unknown_revision(store: StateStore) -> None:
    _session(store)
    with pytest.raises(UnknownRevision):
        rewind_revision(store, "s", 7, ts="t")
