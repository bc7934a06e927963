"""The driver: envelope checks, rollback kinds, retries, CAS, rewind and fork."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.driver import Driver
from claimfsm.engine.errors import SessionFinished
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec
from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import SessionState

Script = Callable[[dict[str, Any]], Envelope]


class In(BaseIO):
    memory: dict[str, Any]
    st: StRef


class Out(BaseIO):
    pass


def scripted(name: str, script: list[Script]) -> Skill[In, Out]:
    """A skill that answers with the next scripted envelope (given the input's ``st``)."""

    def handler(inp: In, ctx: SkillContext) -> Envelope:
        return script.pop(0)(inp.st.model_dump())

    return Skill(name=name, input_model=In, output_model=Out, handler=handler,
                 rb_on_error="state", description="scripted")


def ok(fsm: str, **data: Any) -> Script:
    return lambda st: Envelope.ok(data, rev=st["rev"] + 1, fsm=fsm)


def err(code: str, rb: str = "none") -> Script:
    return lambda st: Envelope.error(code, f"{code} happened", rb=rb)  # type: ignore[arg-type]


MACHINE = MachineDef(
    name="ab",
    states=(StateSpec("A", skill="a", retry=RetryPolicy(codes=frozenset({"FLAKY"}),
                                                         max_attempts=3, backoff_s=10)),
            StateSpec("B", skill="b"), StateSpec("DONE", final=True),
            StateSpec("FAILED", final=True)),
    transitions=(("A", "A"), ("A", "B"), ("B", "DONE"), ("A", "FAILED"), ("B", "FAILED")),
    initial="A",
    failure="FAILED",
)


def tool_binding(skill: Skill[Any, Any]) -> Binding:
    """Like memory_binding, but ``d.tool`` lands in the tool slice (``tool_results``)."""
    base = memory_binding(skill)

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        rest = {k: v for k, v in d.items() if k != "tool"}
        state = base.apply(state, rest, to)
        if "tool" in d:
            state = state.model_copy(update={"tool_results": [*state.tool_results, d["tool"]]})
        return state

    return Binding(skill, base.to_input, apply)


def make(a: list[Script], b: list[Script] | None = None, store: MemoryStore | None = None,
         clock: FixedClock | None = None) -> Driver:
    bindings = {"a": tool_binding(scripted("a", a)), "b": tool_binding(scripted("b", b or []))}
    ids = iter(f"S{n}" for n in range(1, 100))
    return Driver(store or MemoryStore(), machine=MACHINE, bindings=bindings,
                  clock=clock or FixedClock(), new_sid=lambda: next(ids),
                  sleep=lambda s: None)


def test_ok_steps_commit_one_revision_each_and_track_entry() -> None:
    d = make([ok("A", x=1), ok("B", y=2)], [ok("DONE", z=3)])
    sid = d.start("c").sid
    revs = [d.step(sid).revision for _ in range(3)]
    assert [r.rev for r in revs if r] == [1, 2, 3]
    head = d.store.head(sid)
    assert head.fsm == "DONE" and head.state.memory == {"x": 1, "y": 2, "z": 3}
    assert d.store.get(sid, 1).state.entry_rev == 0  # stayed in A
    assert d.store.get(sid, 2).state.entry_rev == 2  # entered B at rev 2
    with pytest.raises(SessionFinished):
        d.step(sid)


def test_stale_sp_rev_is_rev_conflict_and_commits_nothing() -> None:
    d = make([lambda st: Envelope.ok({}, rev=st["rev"], fsm="B")])
    sid = d.start("c").sid
    result = d.step(sid)
    assert not result.committed
    assert result.envelope.e is not None and result.envelope.e.code == "REV_CONFLICT"
    assert d.store.head(sid).rev == 0


def test_illegal_transition_is_an_error_envelope_and_state_is_untouched() -> None:
    d = make([ok("DONE", x=1)])
    sid = d.start("c").sid
    result = d.step(sid)
    assert result.envelope.e is not None and result.envelope.e.code == "ILLEGAL_TRANSITION"
    assert not result.committed and d.store.head(sid).rev == 0


def test_a_crashing_skill_becomes_internal_and_commits_nothing() -> None:
    def boom(st: dict[str, Any]) -> Envelope:
        raise ZeroDivisionError("bug")

    d = make([boom])
    sid = d.start("c").sid
    result = d.step(sid)
    assert result.envelope.e is not None and result.envelope.e.code == "INTERNAL"
    assert "ZeroDivisionError" in result.envelope.e.msg
    assert d.store.head(sid).rev == 0


def test_rb_state_restores_the_state_at_entry_then_fails() -> None:
    d = make([ok("A", x=1, tool={"id": "t1"}), err("BAD", rb="state")])
    sid = d.start("c").sid
    d.step(sid)
    result = d.step(sid)
    head = d.store.head(sid)
    assert result.committed and head.fsm == "FAILED"
    entry = d.store.get(sid, 0).state
    assert head.state.memory == entry.memory == {}
    assert head.state.tool_results == entry.tool_results == []
    assert head.state.error == {"code": "BAD", "msg": "BAD happened"}
    assert head.events[0] == {"type": "Rollback", "rb": "state", "to": 0}


def test_rb_tools_restores_only_the_tool_slice() -> None:
    d = make([ok("A", x=1, tool={"id": "t1"}), ok("A", y=2, tool={"id": "t2"}),
              err("FLAKY", rb="tools")])
    sid = d.start("c").sid
    d.step(sid)
    d.step(sid)
    d.step(sid)
    head = d.store.head(sid)
    assert head.fsm == "A" and head.state.tool_results == []  # entry (rev 0) had none
    assert head.state.memory == {"x": 1, "y": 2}  # the rest is kept
    assert head.state.retry is not None and head.state.retry.attempts == 1


def test_retry_waits_for_backoff_then_exhausts_into_failed() -> None:
    clock = FixedClock()
    d = make([lambda st: Envelope.retry("SLOW", "busy")] * 3, clock=clock)
    sid = d.start("c").sid
    first = d.step(sid)
    assert first.committed and first.revision is not None
    retry = first.revision.state.retry
    assert retry is not None and retry.attempts == 1 and retry.code == "SLOW"
    early = d.step(sid)
    assert not early.committed and early.envelope.e is not None
    assert early.envelope.e.code == "RETRY_NOT_DUE"
    clock.advance(timedelta(seconds=10))
    assert d.step(sid).revision is not None
    clock.advance(timedelta(seconds=20))
    last = d.step(sid)
    head = d.store.head(sid)
    assert last.committed and head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "RETRY_EXHAUSTED"
    assert [r.rev for r in d.store.history(sid)] == [0, 1, 2, 3]


def test_run_sleeps_through_backoff_using_the_injected_sleep() -> None:
    clock = FixedClock()
    slept: list[float] = []
    d = make([err("FLAKY"), ok("B")], [ok("DONE")], clock=clock)

    def sleep(s: float) -> None:
        slept.append(s)
        clock.advance(timedelta(seconds=s))

    d.sleep = sleep
    head = d.run(d.start("c").sid)
    assert head.fsm == "DONE" and slept == [10.0]


def test_a_stale_writer_gets_rev_conflict_never_a_lost_update() -> None:
    store = MemoryStore()
    d1 = make([ok("A", w=1)], store=store)

    def racing(st: dict[str, Any]) -> Envelope:
        d1.step(st["sid"])  # another writer commits revision 1 while this step runs
        return Envelope.ok({"w": 2}, rev=st["rev"] + 1, fsm="A")

    d2 = make([racing], store=store)
    sid = d2.start("c").sid
    result = d2.step(sid)  # read revision 0, built revision 1: stale by the time it commits
    assert not result.committed and result.lost_race
    assert result.envelope.e is not None and result.envelope.e.code == "REV_CONFLICT"
    head = store.head(sid)
    assert head.rev == 1 and head.state.memory == {"w": 1}  # the winner's write, kept
    assert [r.rev for r in store.history(sid)] == [0, 1]


def test_rollback_rewinds_with_a_new_revision_and_keeps_history() -> None:
    d = make([ok("A", x=1), ok("A", x=2), ok("B", x=3)])
    sid = d.start("c").sid
    for _ in range(3):
        d.step(sid)
    head = d.rollback(sid, 1)
    assert head.rev == 4 and head.parent_rev == 3
    assert head.state == d.store.get(sid, 1).state and head.fsm == "A"
    assert len(d.store.history(sid)) == 5


def test_fork_starts_a_new_session_from_a_revision() -> None:
    d = make([ok("A", x=1), ok("A", x=2)])
    sid = d.start("c").sid
    d.step(sid)
    d.step(sid)
    forked = d.fork(sid, 1)
    assert forked.sid != sid and forked.rev == 2 and forked.parent_rev == 1
    assert forked.events == [{"type": "Forked", "from": {"sid": sid, "rev": 1}, "changes": []}]
    assert forked.state.memory == {"x": 1} and forked.state.sid == forked.sid
    assert [r.state.memory for r in d.store.history(forked.sid)] == [{}, {"x": 1}, {"x": 1}]
    assert d.store.head(sid).rev == 2


def test_run_rereads_the_head_when_another_writer_moved_it() -> None:
    # run() takes the revision it committed as the next head; when another writer
    # commits in between, the next commit loses its compare-and-set, and run reads the
    # head again and carries on from the other writer's revision.
    store = MemoryStore()
    other = make([ok("B", by="other")], store=store)
    d = make([ok("A", by="run"), ok("B", by="run")], [ok("DONE", by="run")], store=store)
    moved: list[int] = []

    def interleave(result: Any) -> None:
        if result.committed and not moved:
            moved.append(other.step(result.sid).revision.rev)

    d.on_step = interleave
    head = d.run(d.start("c").sid)
    history = store.history(head.sid)
    assert moved == [2] and head.fsm == "DONE" and head.rev == 3
    assert [r.rev for r in history] == [0, 1, 2, 3]
    assert history[2].state.memory == {"by": "other"} and head.state.memory == {"by": "run"}
