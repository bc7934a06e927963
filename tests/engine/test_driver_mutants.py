"""The driver's results field by field: every revision's state as validation would build
it, the events word for word, and each refused step's whole ``StepResult``. Each test
kills mutants of fsm/engine/driver.py and step.py that the behavioural and stateful
driver tests let live (`make mutate`, docs/testing.md)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.driver import StepResult
from claimfsm.engine.machine import MachineDef, StateSpec
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.model import RetryState, Revision, SessionState
from claimfsm.testing import ScriptedTools, fail, goto, retry, scripted_skill
from claimfsm.testing.scripts import AnyInput, Script
from tests.support.walk import T0, driver, handled, history, refused

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
    assert head.state.memory == {"a": 1} and revs[0].events == [{"type": "SessionStarted",
                                                                     "version": d.version}]


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
    d = driver([])
    first = d.start("a claim", before_create=seen.append)
    assert seen == [first] and first.events == [{"type": "SessionStarted", "version": d.version}]


# -- steps that commit nothing: the whole result ----------------------------------------------


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
