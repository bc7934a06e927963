"""Rollback at its edges: the entry revision exactly at each end of the chain, the rewind's
event and runtime, and ``Driver.rollback``'s refusal and reopen. Each test kills mutants
of state/rollback.py and Driver.rollback that the other rollback tests let live
(`make mutate`, docs/testing.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from claimfsm.engine.driver import Driver
from claimfsm.engine.errors import SessionFailed
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.skills.context import FixedClock
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import UnknownRevision
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import SessionState
from claimfsm.state.rollback import entry_state, rewind_revision, tools_restored
from claimfsm.testing import fail, goto, scripted_driver


def chain(entry_rev: int, length: int = 3) -> tuple[MemoryStore, list[SessionState]]:
    """Revisions ``0..length-1``; the head's ``entry_rev`` is ``entry_rev``."""
    store = MemoryStore()
    states = [make_state("s", fsm="RETRIEVAL", rounds=rev, entry_rev=min(rev, entry_rev),
                         runtime={"budget": {"calls": rev}}) for rev in range(length)]
    states[-1] = states[-1].model_copy(update={"entry_rev": entry_rev})
    store.create(make_revision("s", 0, states[0]))
    for rev in range(1, length):
        store.commit(make_revision("s", rev, states[rev]), expected_rev=rev - 1)
    return store, states


@pytest.mark.parametrize("entry_rev", [0, 1])
def test_entry_state_reads_any_revision_of_the_chain(entry_rev: int) -> None:
    store, states = chain(entry_rev)
    assert entry_state(store, "s", store.head("s")) == states[entry_rev]


def test_entry_state_at_the_head_is_the_head_s_own_state() -> None:
    store, _ = chain(2)
    head = store.head("s")
    assert entry_state(store, "s", head) is head.state


@pytest.mark.parametrize("entry_rev", [-1, 3, 9])
def test_an_entry_rev_outside_the_chain_names_it_and_the_range(entry_rev: int) -> None:
    store, _ = chain(entry_rev)
    with pytest.raises(UnknownRevision) as info:
        entry_state(store, "s", store.head("s"))
    assert (info.value.sid, info.value.rev) == ("s", entry_rev)
    assert info.value.msg == f"entry_rev {entry_rev} is outside 0..2"
    with pytest.raises(UnknownRevision):
        tools_restored(store, "s", store.head("s"))


def test_tools_restored_takes_the_entry_revision_s_tool_slice() -> None:
    store, states = chain(0)
    store.commit(make_revision("s", 3, states[2].model_copy(update={
        "entry_rev": 1, "tool_results": [{"ok": True}]})), expected_rev=2)
    restored = tools_restored(store, "s", store.head("s"))
    assert restored.tool_results == [] and restored.rounds == 2


def test_a_rewind_keeps_the_head_s_runtime_and_says_when_it_reopens() -> None:
    store, states = chain(0)
    plain = rewind_revision(store, "s", 0, ts="2026-01-02T00:00:00Z")
    assert plain.events == [{"type": "Rewind", "to": 0}]
    assert plain.state.runtime == {"budget": {"calls": 2}}  # spent stays spent
    assert plain.state.rounds == 0 and plain.fsm == states[0].fsm
    reopened = rewind_revision(store, "s", 1, ts="2026-01-02T00:00:00Z", reopen=True)
    assert reopened.events == [{"type": "Rewind", "to": 1, "reopen": True}]
    assert (reopened.sid, reopened.rev, reopened.parent_rev) == ("s", 3, 2)


def failed_session() -> tuple[Driver, str]:
    clock = FixedClock(current=datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC))
    driver = scripted_driver(DEFAULT_MACHINE, {"PARSE_CLAIM": [goto("RETRIEVAL")],
                                               "RETRIEVAL": [fail("BROKEN")]}, clock=clock)
    sid = driver.start("a claim").sid
    assert driver.run(sid).fsm == "FAILED"
    return driver, sid


def test_rolling_back_a_failed_session_needs_reopen_and_names_the_session() -> None:
    driver, sid = failed_session()
    with pytest.raises(SessionFailed) as info:
        driver.rollback(sid, 1)
    assert info.value.sid == sid
    assert info.value.msg == (f"session {sid} is FAILED; rolling it back needs reopen "
                              "(claimfsm rollback --reopen)")
    assert driver.store.head(sid).rev == 2


def test_a_reopening_rollback_commits_the_target_at_the_clock_s_time() -> None:
    driver, sid = failed_session()
    head = driver.rollback(sid, 1, reopen=True)
    assert (head.rev, head.parent_rev, head.fsm) == (3, 2, "RETRIEVAL")
    assert head.events == [{"type": "Rewind", "to": 1, "reopen": True}]
    assert head.ts == "2026-03-04T05:06:07.000000+00:00"
    assert driver.store.head(sid) == head


def test_reopen_on_a_session_that_has_not_failed_is_a_plain_rewind() -> None:
    driver = scripted_driver(DEFAULT_MACHINE, {"PARSE_CLAIM": [goto("RETRIEVAL")]})
    sid = driver.start("a claim").sid
    driver.step(sid)
    head = driver.rollback(sid, 0, reopen=True)
    assert head.events == [{"type": "Rewind", "to": 0}] and head.fsm == "PARSE_CLAIM"
