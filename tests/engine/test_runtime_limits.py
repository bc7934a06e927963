"""Per-session limits and the runtime's state in the session: budgets, deadlines, rate
buckets, and the policy / restore / fallback rules seen through a session's revisions."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.machine import DEFAULT_MACHINE, RetryPolicy
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.policies import FetchBeforeExtractPolicy, SequentialDependencyPolicy
from claimfsm.state.model import Revision, SessionState
from claimfsm.testing import ListResource

CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."
BASE = datetime(2026, 1, 1, tzinfo=UTC)


def stepping_clock() -> tuple[FixedClock, Any]:
    """A clock that moves 10 s per committed step (so rate buckets refill predictably)."""
    clock = FixedClock(current=BASE)

    def on_step(result: StepResult) -> None:
        if result.committed:
            clock.advance(timedelta(seconds=10))

    return clock, on_step


def run(claim: str = CLAIM, config: dict[str, Any] | None = None,
        **engine: Any) -> tuple[Revision, list[Revision]]:
    with Engine.open(None, config=EngineConfig(**{"clock": FixedClock(), **engine})) as eng:
        head = eng.driver.run(eng.driver.start(claim, config=config).sid)
        return head, list(eng.store.history(head.sid))


def invoked(rev: Revision) -> list[dict[str, Any]]:
    return [e for e in rev.events if e["type"] == "ToolInvoked"]


def total_calls(history: list[Revision]) -> int:
    return sum(1 for r in history for e in invoked(r) if e["code"] != "BUDGET_EXCEEDED")


# -- budgets ------------------------------------------------------------------------------


def test_the_budget_is_counted_in_the_session_across_steps() -> None:
    head, history = run()
    assert head.fsm == "DONE"
    assert head.state.runtime["budget"] == {"calls": total_calls(history)}
    counts = [r.state.runtime.get("budget", {}).get("calls", 0) for r in history]
    assert counts == sorted(counts) and counts[-1] > 1


def test_a_spent_budget_fails_the_session_and_keeps_every_revision() -> None:
    _, full = run()
    needed = total_calls(full)
    exact, _ = run(config={"max_tool_calls": needed})
    assert exact.fsm == "DONE"  # exactly enough is enough
    head, history = run(config={"max_tool_calls": needed - 1})
    assert head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "BUDGET_EXCEEDED"
    assert "budget of" in head.state.error["msg"]
    assert [r.rev for r in history] == list(range(head.rev + 1))  # nothing dropped
    assert head.state.runtime["budget"] == {"calls": needed - 1}
    assert {"type": "LimitExceeded", "code": "BUDGET_EXCEEDED",
            "msg": head.state.error["msg"]} in head.events
    assert any(e["code"] == "BUDGET_EXCEEDED" for e in invoked(head))
    assert head.envelope is not None and head.envelope["e"]["code"] == "BUDGET_EXCEEDED"


def test_limit_codes_are_never_retried_whatever_the_retry_policy() -> None:
    retry_all = RetryPolicy(codes=frozenset({"BUDGET_EXCEEDED", "DEADLINE_EXCEEDED"}),
                            max_attempts=5)
    machine = dataclasses.replace(DEFAULT_MACHINE, states=tuple(
        dataclasses.replace(s, retry=retry_all) if s.skill else s
        for s in DEFAULT_MACHINE.states))
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        driver = Driver(eng.store, machine=machine, tools=eng.driver.tools,
                        clock=FixedClock(), sleep=lambda s: None)
        head = driver.run(driver.start(CLAIM, config={"max_tool_calls": 1}).sid)
    assert head.fsm == "FAILED" and head.state.retry is None
    assert head.state.error is not None and head.state.error["code"] == "BUDGET_EXCEEDED"


# -- deadlines ----------------------------------------------------------------------------


def test_a_passed_deadline_fails_the_session_before_the_next_step_runs() -> None:
    clock, on_step = stepping_clock()
    head, history = run(config={"deadline_s": 35}, clock=clock, on_step=on_step)
    assert head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "DEADLINE_EXCEEDED"
    assert history[0].state.runtime == {"deadline_at": "2026-01-01T00:00:35.000000+00:00"}
    # Revisions 1-4 ran at 0, 10, 20, 30 s; the step at 40 s ran nothing.
    assert head.rev == 5 and invoked(head) == []
    assert [r.rev for r in history] == list(range(6))
    assert history[4].fsm == "RETRIEVAL"


def test_a_handler_that_outlives_the_deadline_fails_the_session_at_its_heartbeat() -> None:
    class Q(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        q: str
        lim: int = 4

    class Out(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        hits: list[dict[str, Any]]

    clock = FixedClock(current=BASE)

    def slow(params: Q, *, context: ToolContext) -> ToolResult[Out]:
        clock.advance(timedelta(minutes=5))  # long work...
        context.beat()  # ...that checks in
        return ToolResult.ok(Out(hits=[]))

    tool = Tool(name="slow_search", description="A slow search.", params=Q, result=Out,
                handler=slow)
    head, _ = run(config={"deadline_s": 60}, clock=clock, extra_tools=[tool],
                  bind={"RETRIEVAL": ["slow_search"]})
    assert head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "DEADLINE_EXCEEDED"
    assert "slow_search" in head.state.error["msg"]


def test_run_never_sleeps_past_the_deadline() -> None:
    clock = FixedClock(current=BASE)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(timedelta(seconds=seconds))

    limit = {"capacity": 1, "per_seconds": 3600}
    slow_retry = dataclasses.replace(DEFAULT_MACHINE, states=tuple(
        dataclasses.replace(s, retry=RetryPolicy(codes=frozenset({"RATE_LIMITED"}),
                                                 backoff_s=600, cap_s=600, max_attempts=5))
        if s.name == "RETRIEVAL" else s for s in DEFAULT_MACHINE.states))
    with Engine.open(None, config=EngineConfig(clock=clock)) as eng:
        driver = Driver(eng.store, machine=slow_retry, tools=eng.driver.tools, clock=clock,
                        sleep=sleep)
        config = {"deadline_s": 100,
                  "rate_limits": {"kb_lookup": limit, "search": limit, "web_search": limit}}
        claim = "Canberra is the capital of Australia and Sydney is in Australia."
        head = driver.run(driver.start(claim, config=config).sid)
        history = list(eng.store.history(head.sid))
    assert head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "DEADLINE_EXCEEDED"
    waiting = history[-2]
    assert waiting.state.retry is not None and waiting.state.retry.code == "RATE_LIMITED"
    assert waiting.state.retry.next_at > head.state.runtime["deadline_at"]
    # It slept only until the deadline (not the 600 s backoff), then failed at once.
    assert slept == [100.0] and head.ts == head.state.runtime["deadline_at"]


# -- runtime state in the session -------------------------------------------------------------


def test_rate_limit_fallback_is_two_attempts_in_the_revision() -> None:
    clock, on_step = stepping_clock()
    limit = {"capacity": 1, "per_seconds": 70}
    head, history = run(config={"rate_limits": {"search": limit, "web_search": limit}},
                        clock=clock, on_step=on_step)
    fell_back = [r for r in history if len(invoked(r)) == 2 and r.skill == "retrieve"]
    assert len(fell_back) == 1
    first, second = invoked(fell_back[0])
    assert (first["tool"], first["code"], first["attempt"]) == ("search", "RATE_LIMITED", 1)
    assert (second["tool"], second["ok"], second["attempt"]) == ("web_search", True, 2)
    assert first["id"] == second["id"] and second["args"] == {
        k: v for k, v in first["args"].items() if k != "src"}
    rec = fell_back[0].envelope["d"]["results"][0] if fell_back[0].envelope else {}
    assert rec["tool"] == "web_search" and rec["ok"]
    # The bucket that refused the search is saved in the revision and loaded next step.
    assert fell_back[0].state.runtime["limits"]["search"]["tokens"] < 1
    assert head.fsm == "DONE"


def test_rate_limits_without_saved_buckets_would_never_bind() -> None:
    # The same limits from the engine: a fresh executor per step still sees the bucket.
    clock, on_step = stepping_clock()
    _, history = run(clock=clock, on_step=on_step,
                     rate_limits={"search": RateLimit(1, 70), "web_search": RateLimit(1, 70)})
    assert any(e["code"] == "RATE_LIMITED" for r in history for e in invoked(r))


def test_spent_calls_survive_a_tools_rollback() -> None:
    state = SessionState(sid="s", claim="c", fsm="RETRIEVAL",
                         runtime={"budget": {"calls": 7}}, tool_results=[{"id": "t1"}])
    earlier = SessionState(sid="s", claim="c", fsm="RETRIEVAL")
    restored = state.restore_tools_from(earlier)
    assert restored.tool_results == [] and restored.runtime == {"budget": {"calls": 7}}


def test_policy_denial_is_visible_in_the_revision_and_runs_nothing() -> None:
    deny = SequentialDependencyPolicy(dependencies={"kb_lookup": frozenset({"page_fetch"})})
    head, history = run(policies=(deny, FetchBeforeExtractPolicy()))
    denied = next(r for r in history if any(e["code"] == "POLICY_DENIED" for e in invoked(r)))
    rec = denied.envelope["d"]["results"][0] if denied.envelope else {}
    assert rec["tool"] == "kb_lookup" and not rec["ok"] and rec["code"] == "POLICY_DENIED"
    assert "requires page_fetch" in rec["msg"]
    step = next(s for s in denied.state.steps if s["id"] == rec["id"])
    assert step["status"] == "failed" and step["code"] == "POLICY_DENIED"
    assert "kb_lookup" not in denied.state.policy.get("sequential_dependency", {}).get(
        "invoked_tools", [])
    assert head.fsm == "DONE"  # a denied call never aborts the session


def test_a_raising_handler_restores_resources_and_the_session_goes_on() -> None:
    class Q(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        q: str

    class Out(BaseModel):
        model_config = ConfigDict(frozen=True, extra="forbid")
        hits: list[dict[str, Any]]

    def flaky(params: Q, *, context: ToolContext) -> ToolResult[Out]:
        notes: ListResource = context.resource("notes")
        notes.items.append(params.q)  # a side effect half-way...
        raise RuntimeError("upstream exploded")  # ...then a crash

    notes = ListResource()
    tool = Tool(name="notes_search", description="Search and take notes.", params=Q,
                result=Out, handler=flaky)
    head, _ = run(extra_tools=[tool], bind={"RETRIEVAL": ["notes_search"]},
                  resources={"notes": notes})
    assert notes.items == []  # restored after every failed call
    failed = [s for s in head.state.steps if s["tool"] == "notes_search"]
    assert failed and all(s["status"] == "failed" and s["code"] == "TOOL_ERROR" for s in failed)
    recs = [r for r in head.state.tool_results if r["tool"] == "notes_search"]
    assert all("RuntimeError: upstream exploded" in r["msg"] for r in recs)
    assert all("notes_search" not in v.get("invoked_tools", [])
               for v in head.state.policy.values())
    assert head.fsm == "DONE"
