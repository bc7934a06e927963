"""Rate limits on the injected clock, concurrency limits with threads, the call budget."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.core import (
    BudgetTracker,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolResult,
)
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.limits import RateLimit, ToolLimits
from claimfsm.skills.tools.registry import ToolRegistry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Q(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str = "x"


class Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str


def quick(params: Q, *, context: ToolContext) -> ToolResult[Out]:
    return ToolResult.ok(Out(q=params.q))


QUICK = Tool(name="search", description="Search.", params=Q, result=Out, handler=quick)


def test_token_bucket_refills_as_the_fixed_clock_advances() -> None:
    clock = FixedClock(current=T0)
    limits = ToolLimits(rate={"search": RateLimit(capacity=2, per_seconds=10)})
    ex = Executor(ToolRegistry([QUICK]), clock=clock, limits=limits)
    assert [ex.call("search", {}).ok for _ in range(3)] == [True, True, False]
    assert ex.calls[-1].code == "RATE_LIMITED"
    clock.advance(timedelta(seconds=4))  # 0.8 of a token: still empty
    assert ex.call("search", {}).code == "RATE_LIMITED"
    clock.advance(timedelta(seconds=1))  # 1.0 token
    assert ex.call("search", {}).ok
    assert ex.call("search", {}).code == "RATE_LIMITED"
    clock.advance(timedelta(hours=1))  # refills to capacity, never beyond
    assert [ex.call("search", {}).ok for _ in range(3)] == [True, True, False]


def test_rate_limits_are_per_tool() -> None:
    limits = ToolLimits(rate={"search": RateLimit(capacity=1, per_seconds=60)})
    assert limits.take("search", T0) and not limits.take("search", T0)
    assert all(limits.take("other", T0) for _ in range(5))
    assert limits.tokens("other", T0) is None


def test_rate_state_round_trips_so_a_replay_meets_the_same_refusals() -> None:
    limits = ToolLimits(rate={"search": RateLimit(capacity=2, per_seconds=10)})
    assert limits.take("search", T0)
    state = limits.state()
    assert state == {"search": {"tokens": 1.0, "at": T0.isoformat()}}
    again = ToolLimits(rate={"search": RateLimit(capacity=2, per_seconds=10)})
    again.load(state)
    assert again.take("search", T0) and not again.take("search", T0)
    fresh = ToolLimits(rate={"search": RateLimit(capacity=2, per_seconds=10)})
    assert fresh.take("search", T0) and fresh.take("search", T0)
    with pytest.raises(ValueError, match="search"):
        again.load({"search": {"tokens": "lots"}})


def test_clock_going_backwards_refills_nothing() -> None:
    limits = ToolLimits(rate={"search": RateLimit(capacity=1, per_seconds=1)})
    assert limits.take("search", T0)
    assert not limits.take("search", T0 - timedelta(hours=1))


def test_bad_limit_configuration_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="capacity"):
        ToolLimits(rate={"search": RateLimit(capacity=0, per_seconds=1)})
    with pytest.raises(ToolDefinitionError, match="per_seconds"):
        ToolLimits(rate={"search": RateLimit(capacity=1, per_seconds=0)})
    with pytest.raises(ToolDefinitionError, match="concurrency"):
        ToolLimits(concurrency={"search": 0})


def test_concurrency_limit_with_threads() -> None:
    started = threading.Barrier(3)  # two running handlers + the test thread
    release = threading.Event()

    def slow(params: Q, *, context: ToolContext) -> ToolResult[Out]:
        if params.q in ("q0", "q1"):  # the two calls that hold the slots
            started.wait(timeout=5)
            release.wait(timeout=5)
        return ToolResult.ok(Out(q=params.q))

    tool = Tool(name="search", description="Slow search.", params=Q, result=Out, handler=slow)
    limits = ToolLimits(concurrency={"search": 2})
    ex = Executor(ToolRegistry([tool]), clock=FixedClock(), limits=limits)
    results: list[Any] = []
    workers = [
        threading.Thread(target=lambda i=i: results.append(ex.call("search", {"q": f"q{i}"})))
        for i in range(2)
    ]
    for w in workers:
        w.start()
    started.wait(timeout=5)  # both slots are now held
    assert limits.in_flight("search") == 2
    third = ex.call("search", {"q": "q3"})
    assert (third.ok, third.code) == (False, "CONCURRENCY_LIMITED")
    release.set()
    for w in workers:
        w.join(timeout=5)
    assert sorted(c.ok for c in results) == [True, True]
    assert limits.in_flight("search") == 0
    assert ex.call("search", {"q": "q4"}).ok  # slots were released


def test_slot_context_manager_releases() -> None:
    limits = ToolLimits(concurrency={"search": 1})
    with limits.slot("search") as ok:
        assert ok
        with limits.slot("search") as second:
            assert not second
    assert limits.in_flight("search") == 0


def test_budget_counts_calls_and_refuses_past_the_limit() -> None:
    budget = BudgetTracker(max_calls=2)
    ex = Executor(ToolRegistry([QUICK]), clock=FixedClock(), budget=budget)
    assert ex.call("search", {}).ok and ex.call("search", {}).ok
    over = ex.call("search", {})
    assert (over.code, budget.calls, budget.remaining) == ("BUDGET_EXCEEDED", 2, 0)
    assert "budget of 2" in over.message
    assert budget.state() == {"calls": 2}
    restored = BudgetTracker(max_calls=3)
    restored.load(budget.state())
    assert restored.remaining == 1


def test_refused_calls_do_not_spend_the_budget() -> None:
    budget = BudgetTracker(max_calls=5)
    ex = Executor(ToolRegistry([QUICK]), clock=FixedClock(), budget=budget)
    ex.call("nope", {})
    ex.call("search", {"bad": 1})
    assert budget.calls == 0
    ex.call("search", {})
    assert budget.calls == 1


def test_budget_is_checked_before_the_rate_limit_takes_a_token() -> None:
    limits = ToolLimits(rate={"search": RateLimit(capacity=5, per_seconds=60)})
    ex = Executor(ToolRegistry([QUICK]), clock=FixedClock(current=T0),
                  budget=BudgetTracker(max_calls=1), limits=limits)
    assert ex.call("search", {}).ok
    assert ex.call("search", {}).code == "BUDGET_EXCEEDED"
    assert limits.tokens("search", T0) == 4.0  # the refused call took no token
