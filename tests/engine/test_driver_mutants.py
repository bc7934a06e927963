"""The driver's results field by field: every revision's state as validation would build
it, the events word for word, each refused step's whole ``StepResult``, and the waits of
``run``. Each test kills mutants of fsm/engine/driver.py and step.py that the behavioural
and stateful driver tests let live (`make mutate`, docs/testing.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.errors import MachineMismatch, SessionFinished, UnknownSkill
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec
from claimfsm.skills.base import Skill
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import RevConflict
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import RetryState, Revision, SessionState
from claimfsm.testing import ScriptedTools, fail, goto, retry, scripted_skill
from claimfsm.testing.scripts import AnyInput, Script

T0 = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = RetryPolicy(codes=frozenset({"FLAKY"}), max_attempts=3, backoff_s=2.0, factor=2.0)
WALK = MachineDef(name="walk", states=(
    StateSpec("WORK", skill="work", retry=POLICY), StateSpec("CHECK", skill="check"),
    StateSpec("DONE", final=True), StateSpec("FAILED", final=True)),
    transitions=(("WORK", "WORK"), ("WORK", "CHECK"), ("WORK", "FAILED"),
                 ("CHECK", "WORK"), ("CHECK", "DONE"), ("CHECK", "FAILED")),
    initial="WORK", failure="FAILED")


TO_DONE = goto("DONE")


def driver(work: Script | list[Script], check: Script | list[Script] = TO_DONE, *,
           machine: MachineDef = WALK, clock: FixedClock | None = None,
           store: MemoryStore | None = None, tools: Any = None, sleeps: list[float] | None = None,
           seen: list[StepResult] | None = None,
           bindings: Mapping[str, Binding] | None = None) -> Driver:
    """A driver of ``machine`` whose skills answer from scripts; ``sleeps`` collects the
    waits ``run`` asks for (the clock moves by them)."""
    fixed = clock or FixedClock(current=T0)

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        fixed.advance(timedelta(seconds=seconds))

    return Driver(store or MemoryStore(), machine=machine, bindings=bindings or {
        "work": memory_binding(scripted_skill("work", work)),
        "check": memory_binding(scripted_skill("check", check))},
        tools=tools, clock=fixed, new_sid=lambda: "S1", sleep=sleep,
        on_step=None if seen is None else seen.append)


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


def handled(name: str, handler: Callable[[Any, SkillContext], Envelope]) -> Skill[Any, Any]:
    """A skill of any input running ``handler``."""
    return Skill(name=name, input_model=AnyInput, output_model=_Out, handler=handler,
                 rb_on_error="none", description=name)


def as_validated(state: SessionState) -> SessionState:
    return SessionState.model_validate(state.model_dump())


def check_revision(rev: Revision) -> None:
    """What every committed revision holds: the state validation would build (no field
    missing, none extra), stamped with the revision's FSM state."""
    assert set(vars(rev.state)) == set(SessionState.model_fields)
    assert as_validated(rev.state) == rev.state and rev.state.fsm == rev.fsm


def history(d: Driver) -> list[Revision]:
    revisions = list(d.store.history("S1"))
    for rev in revisions:
        check_revision(rev)
    return revisions


# -- what committed revisions hold ---------------------------------------------------------


def test_ok_steps_clear_retry_and_error_and_stamp_the_entry() -> None:
    d = driver([retry("FLAKY"), goto("WORK", a=1), goto("CHECK")])
    d.start("a claim")
    head = d.run("S1")
    revs = history(d)
    assert [r.fsm for r in revs] == ["WORK", "WORK", "WORK", "CHECK", "DONE"]
    assert revs[1].state.retry == RetryState(state="WORK", attempts=1,
                                              next_at="2026-01-01T00:00:02.000000+00:00",
                                              code="FLAKY")
    assert revs[1].events == [{"type": "RetryScheduled", "attempt": 1, "code": "FLAKY"}]
    assert revs[2].state.retry is None and revs[2].state.error is None
    assert [r.state.entry_rev for r in revs] == [0, 0, 0, 3, 4]
    assert head.state.memory == {"a": 1} and revs[0].events == [{"type": "SessionStarted"}]


def test_an_exhausted_retry_fails_with_its_attempts_and_last_code() -> None:
    d = driver([retry("FLAKY", "later")] * 3)
    d.start("a claim")
    head = d.run("S1")
    history(d)
    assert (head.rev, head.fsm, head.state.entry_rev) == (3, "FAILED", 3)
    assert head.state.error == {"code": "RETRY_EXHAUSTED",
                                "msg": "3 attempts in WORK; last: FLAKY: later"}
    assert head.state.retry == RetryState(state="WORK", attempts=3, next_at=None, code="FLAKY")


def test_an_error_that_is_not_retried_fails_at_once_without_a_retry() -> None:
    d = driver([fail("BROKEN", msg="it broke")])
    d.start("a claim")
    head = d.run("S1")
    history(d)
    assert head.state.error == {"code": "BROKEN", "msg": "it broke"}
    assert head.state.retry is None and head.state.entry_rev == 1


def test_rb_tools_restores_the_tool_slice_and_says_so() -> None:
    d = driver([goto("WORK"), fail("LOST", rb="tools")], tools=ScriptedTools())
    d.start("a claim")
    head = d.run("S1")
    history(d)
    assert head.fsm == "FAILED"
    assert head.events == [{"type": "Rollback", "rb": "tools", "to": 0}]


def test_a_step_with_tools_stores_their_policy_and_whole_calls_as_json() -> None:
    tools = ScriptedTools({"search": {"pair": (1, 2)}})

    def calls_search(inp: Any, ctx: SkillContext) -> Envelope:
        assert ctx.tools is not None
        ctx.tools.call("search", {"q": "x"})
        tools.policy_state["seen"] = ["x"]
        return Envelope.ok({"id": ctx.ids.next("e")}, rev=inp.st.rev + 1, fsm="CHECK")

    d = driver([], tools=tools, bindings={"work": memory_binding(handled("work", calls_search)),
                                          "check": memory_binding(scripted_skill(
                                              "check", goto("DONE")))})
    d.start("a claim")
    result = d.step("S1")
    rev = history(d)[-1]
    assert result.skill == "work" and rev.state.policy == {"seen": ["x"]}
    assert rev.state.memory == {"id": "e1"}
    (event,) = [e for e in rev.events if e["type"] == "ToolCalls"]
    assert event["calls"][0]["value"] == {"pair": [1, 2]}
    assert type(event["calls"][0]["value"]["pair"]) is list


def test_without_tools_the_runtime_is_the_parent_s_own() -> None:
    d = driver([goto("CHECK")])
    first = d.start("a claim", config={"deadline_s": 60})
    d.step("S1")
    assert d.store.head("S1").state.runtime is first.state.runtime


def test_before_create_sees_the_first_revision() -> None:
    seen: list[Revision] = []
    first = driver([]).start("a claim", before_create=seen.append)
    assert seen == [first] and first.events == [{"type": "SessionStarted"}]


# -- steps that commit nothing: the whole result ----------------------------------------------


def refused(result: StepResult, skill: str | None, code: str, msg: str) -> None:
    assert (result.sid, result.before, result.after, result.skill) == ("S1", "WORK", "WORK",
                                                                      skill)
    assert result.revision is None and result.ts == "2026-01-01T00:00:00.000000+00:00"
    assert result.envelope.e is not None and result.envelope.s != "ok"
    assert (result.envelope.e.code, result.envelope.e.msg) == (code, msg)


def test_a_retry_not_due_is_refused_by_the_step_s_one_clock_reading() -> None:
    seen: list[StepResult] = []
    d = driver([retry("FLAKY"), goto("CHECK")], seen=seen)
    d.start("a claim")
    d.step("S1")
    result = d.step("S1")
    refused(result, None, "RETRY_NOT_DUE",
            "next attempt at 2026-01-01T00:00:02.000000+00:00")
    assert seen == [seen[0], result]  # reported too
    d.clock.advance(timedelta(seconds=1.5))  # type: ignore[attr-defined]
    assert not d.step("S1").committed  # half a second to go is still not due

    class Ticking(FixedClock):
        def now(self) -> datetime:  # every reading is 1.5 s later than the one before
            self.advance(timedelta(seconds=1.5))
            return super().now()

    late = driver([retry("FLAKY"), goto("CHECK")], clock=Ticking(current=T0 - timedelta(
        seconds=1.5)))
    late.start("a claim")  # read at T0
    late.step("S1")  # read at T0+1.5: next attempt at T0+3.5
    result = late.step("S1")  # read once, at T0+3: not due (a second reading would be)
    assert result.envelope.e is not None and result.envelope.e.code == "RETRY_NOT_DUE"


def test_a_binding_that_cannot_build_the_input_is_internal_naming_it() -> None:
    def broken(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("plans")

    work = memory_binding(scripted_skill("work", goto("CHECK")))
    d = driver([], bindings={"work": Binding(work.skill, broken, work.apply),
                             "check": work})
    d.start("a claim")
    refused(d.step("S1"), "work", "INTERNAL", "work input: KeyError: 'plans'")
    assert d.store.head("S1").rev == 0


def test_a_binding_that_cannot_apply_the_output_is_internal_naming_it() -> None:
    def broken(state: SessionState, data: dict[str, Any], to: str) -> SessionState:
        raise ValueError("no room")

    work = memory_binding(scripted_skill("work", goto("CHECK")))
    seen: list[StepResult] = []
    d = driver([], bindings={"work": Binding(work.skill, work.to_input, broken),
                             "check": work}, seen=seen)
    d.start("a claim")
    result = d.step("S1")
    refused(result, "work", "INTERNAL", "work apply: ValueError: no room")
    assert seen == [result] and d.store.head("S1").rev == 0


def test_a_binding_s_build_and_patch_are_what_the_driver_uses() -> None:
    work = memory_binding(handled("work", lambda inp, ctx: Envelope.ok(
        {"got": inp.model_extra["made"]}, rev=inp.st.rev + 1, fsm="CHECK")))
    built = Binding(work.skill, work.to_input, work.apply,
                    build=lambda raw: AnyInput.model_validate({**raw, "made": "by build"}),
                    patch=lambda state, data, to: {"memory": {**data, "to": to}})
    d = driver([], bindings={"work": built, "check": work})
    d.start("a claim")
    d.step("S1")
    assert history(d)[-1].state.memory == {"got": "by build", "to": "CHECK"}


@pytest.mark.parametrize(("answer", "code", "msg"), [
    (Envelope(s="ok", d={"x": 1}), "ILLEGAL_TRANSITION", "work: ok envelope without d.sp"),
    (lambda st: Envelope.ok({}, rev=st["rev"] + 2, fsm="CHECK"), "REV_CONFLICT",
     "sp.rev is 2, expected head+1 = 1"),
])
def test_an_envelope_the_driver_refuses_says_why(answer: Script, code: str, msg: str) -> None:
    d = driver(answer)
    d.start("a claim")
    refused(d.step("S1"), "work", code, msg)


def test_an_error_in_a_machine_without_failure_state_is_refused() -> None:
    bare = MachineDef(name="bare", states=(StateSpec("WORK", skill="work"),
                                           StateSpec("DONE", final=True)),
                      transitions=(("WORK", "DONE"),), initial="WORK")
    d = driver(fail("BROKEN"), machine=bare)
    d.start("a claim")
    refused(d.step("S1"), "work", "ILLEGAL_TRANSITION",
            "BROKEN in WORK and the machine has no failure state")


class Racing(MemoryStore):
    """A store another writer beats to every commit after the first ``wins``."""

    def __init__(self, wins: int) -> None:
        super().__init__()
        self.wins, self.tries = wins, 0

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        self.tries += 1
        if self.tries > self.wins:
            raise RevConflict(f"head is {expected_rev + 1}, not {expected_rev}",
                              sid=revision.sid)
        return super().commit(revision, expected_rev=expected_rev)


def test_a_lost_compare_and_set_is_a_rev_conflict_marked_lost() -> None:
    seen: list[StepResult] = []
    d = driver(goto("WORK"), store=Racing(0), seen=seen)
    d.start("a claim")
    result = d.step("S1")
    refused(result, "work", "REV_CONFLICT", "head is 1, not 0")
    assert result.lost_race and seen == [result]


@pytest.mark.parametrize(("wins", "tries"), [(0, 1), (2, 4)])
def test_run_retries_a_lost_race_once_from_a_fresh_head(wins: int, tries: int) -> None:
    store = Racing(wins)
    d = driver(goto("WORK"), store=store)
    d.start("a claim")
    head = d.run("S1")
    # The first head is fresh: a lost race there ends the run. After a commit, one more
    # try from the head read again, then the run ends.
    assert store.tries == tries and head == store.head("S1") and head.rev == wins


def test_run_returns_the_head_after_a_step_that_commits_nothing() -> None:
    seen: list[StepResult] = []
    d = driver([goto("WORK"), goto("DONE"), goto("CHECK")], seen=seen)
    d.start("a claim")
    head = d.run("S1")  # WORK -> DONE is illegal: one refused step, then the run ends
    assert head == d.store.head("S1") and head.rev == 1
    assert [r.committed for r in seen] == [True, False]


def test_run_stops_after_a_thousand_steps_by_default() -> None:
    d = driver(goto("WORK"))
    d.start("a claim")
    assert d.run("S1").rev == 1000


# -- waiting for retries ------------------------------------------------------------------------


@pytest.mark.parametrize(("deadline", "waits"), [(None, [2.0]), (60, [2.0]), (1.5, [1.5]),
                                                 (0.5, [0.5])])
def test_run_sleeps_until_the_retry_but_never_past_the_deadline(
        deadline: float | None, waits: list[float]) -> None:
    sleeps: list[float] = []
    d = driver([retry("FLAKY"), goto("CHECK")], sleeps=sleeps)
    d.start("a claim", config={} if deadline is None else {"deadline_s": deadline})
    d.run("S1")
    assert sleeps == waits


def test_run_does_not_sleep_once_the_deadline_has_passed() -> None:
    sleeps: list[float] = []
    d = driver([retry("FLAKY"), goto("CHECK")], sleeps=sleeps)
    d.start("a claim", config={"deadline_s": 1})
    d.step("S1")
    d.clock.advance(timedelta(seconds=1.5))  # type: ignore[attr-defined]
    assert d.run("S1").state.error == {
        "code": "DEADLINE_EXCEEDED", "msg": "session deadline 2026-01-01T00:00:01+00:00 "
        "passed at 2026-01-01T00:00:01.500000+00:00 (config.deadline_s = 1)"}
    assert sleeps == []


def test_a_short_retry_is_waited_for_within_the_deadline() -> None:
    sleeps: list[float] = []
    quick = RetryPolicy(codes=frozenset({"FLAKY"}), backoff_s=0.5)
    machine = MachineDef(name="walk", states=(StateSpec("WORK", skill="work", retry=quick),
                                              *WALK.states[1:]),
                         transitions=WALK.transitions, initial="WORK", failure="FAILED")
    d = driver([retry("FLAKY"), goto("CHECK")], machine=machine, sleeps=sleeps)
    d.start("a claim", config={"deadline_s": 0.25})
    d.run("S1")
    assert sleeps == [0.25]


@pytest.mark.parametrize("pending", [
    RetryState(state="CHECK", attempts=1, next_at="2026-01-01T01:00:00+00:00"),
    RetryState(state="WORK", attempts=1, next_at=None),
])
def test_a_retry_of_another_state_or_without_a_time_does_not_hold_a_step(
        pending: RetryState) -> None:
    sleeps: list[float] = []
    d = driver(goto("CHECK"), sleeps=sleeps)
    first = d.start("a claim")
    state = first.state.model_copy(update={"retry": pending})
    d.store.commit(first.model_copy(update={"rev": 1, "parent_rev": 0, "state": state}),
                   expected_rev=0)
    assert d.step("S1").committed
    d.store.commit(d.store.head("S1").model_copy(update={
        "rev": 3, "parent_rev": 2, "fsm": "WORK", "state": state}), expected_rev=2)
    assert d.run("S1").fsm == "DONE" and sleeps == []


# -- refusals before any step -------------------------------------------------------------------


def test_stepping_a_finished_session_names_it_and_its_state() -> None:
    d = driver(goto("CHECK"))
    d.start("a claim")
    d.run("S1")
    with pytest.raises(SessionFinished) as info:
        d.step("S1")
    assert (info.value.sid, info.value.msg) == ("S1", "session S1 is in final state DONE")


def test_a_session_of_another_machine_names_its_state() -> None:
    d = driver(goto("CHECK"))
    first = d.start("a claim")
    state = first.state.model_copy(update={"fsm": "ELSEWHERE"})
    d.store.commit(first.model_copy(update={"rev": 1, "parent_rev": 0, "fsm": "ELSEWHERE",
                                            "state": state}), expected_rev=0)
    with pytest.raises(MachineMismatch) as info:
        d.step("S1")
    assert info.value.sid == "S1" and info.value.msg == (
        "session S1 is in state ELSEWHERE, which machine 'walk' does not have (was it "
        "started by another machine? drive it with that one)")


def test_a_machine_binding_an_unknown_skill_is_refused_naming_it() -> None:
    with pytest.raises(UnknownSkill) as info:
        Driver(MemoryStore(), machine=WALK, bindings={
            "work": memory_binding(scripted_skill("work", goto("CHECK")))})
    assert info.value.msg == "state CHECK binds unknown skill 'check'"


def test_default_session_ids_are_twelve_hex_digits() -> None:
    ids = {Driver(MemoryStore(), machine=WALK, bindings=driver([]).bindings).new_sid()
           for _ in range(20)}
    assert len(ids) == 20 and all(len(i) == 12 and int(i, 16) >= 0 for i in ids)
