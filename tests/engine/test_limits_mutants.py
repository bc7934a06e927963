"""The session limits' checks exactly at their bounds, their messages word for word, and
the small helpers around them: each test here kills mutants of fsm/engine/limits.py and
skills/limits.py that the behavioural tests let live (`make mutate`, docs/testing.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from claimfsm.engine.limits import (
    MAX_DEADLINE_S,
    MAX_TOOL_CALLS,
    SessionConfigError,
    SessionLimits,
    check_config,
    deadline_envelope,
    initial_runtime,
    limit_envelope,
    next_runtime,
    seconds_left,
)
from claimfsm.skills.context import ToolCall
from claimfsm.skills.limits import too_large
from claimfsm.skills.tools.core import ToolDefinitionError
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.state.model import SessionState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def state(config: dict[str, Any] | None = None, **runtime: Any) -> SessionState:
    return SessionState(sid="s", claim="c", fsm="RETRIEVAL", config=config or {},
                        runtime=runtime)


def refused(config: dict[str, Any]) -> SessionConfigError:
    with pytest.raises(SessionConfigError) as info:
        check_config(config)
    assert info.value.code == "BAD_CONFIG"
    return info.value


# -- the bounds, exactly at and just past them ------------------------------------------


@pytest.mark.parametrize("seconds", [0.5, 1, MAX_DEADLINE_S])
def test_a_deadline_anywhere_in_its_range_is_taken(seconds: float) -> None:
    check_config({"deadline_s": seconds})
    at = initial_runtime({"deadline_s": seconds}, NOW)["deadline_at"]
    assert datetime.fromisoformat(at) == NOW + timedelta(seconds=seconds)


@pytest.mark.parametrize("seconds", [0, -1, -0.5, MAX_DEADLINE_S * 2, True, False, "9",
                                     float("nan")])
def test_a_deadline_out_of_its_range_is_refused_word_for_word(seconds: object) -> None:
    error = refused({"deadline_s": seconds})
    assert error.field == "config.deadline_s"
    assert error.msg == f"config.deadline_s: expected a number in (0, 1e+09], got {seconds!r}"


@pytest.mark.parametrize("calls", [0, 1, MAX_TOOL_CALLS])
def test_a_budget_anywhere_in_its_range_is_taken(calls: int) -> None:
    check_config({"max_tool_calls": calls})
    kwargs = SessionLimits.build().executor_kwargs(state({"max_tool_calls": calls}))
    assert kwargs["budget"].max_calls == calls


@pytest.mark.parametrize("calls", [-1, MAX_TOOL_CALLS + 1, 2.0, True, False, "3"])
def test_a_budget_out_of_its_range_is_refused_word_for_word(calls: object) -> None:
    error = refused({"max_tool_calls": calls})
    assert error.field == "config.max_tool_calls"
    assert error.msg == ("config.max_tool_calls: expected an integer in 0..1000000000, "
                         f"got {calls!r}")


@pytest.mark.parametrize("capacity, per", [(1, 0.5), (MAX_TOOL_CALLS, 1), (2, MAX_DEADLINE_S),
                                           (3, 1)])
def test_a_rate_limit_anywhere_in_its_range_is_taken(capacity: int, per: float) -> None:
    config = {"rate_limits": {"search": {"capacity": capacity, "per_seconds": per}}}
    check_config(config)
    limits = SessionLimits.build().executor_kwargs(state(config))["limits"]
    assert limits.rate == {"search": RateLimit(capacity=capacity, per_seconds=float(per))}


@pytest.mark.parametrize("capacity", [0, -1, MAX_TOOL_CALLS + 1, 1.5, True, None])
def test_a_capacity_out_of_its_range_is_refused_word_for_word(capacity: object) -> None:
    error = refused({"rate_limits": {"search": {"capacity": capacity, "per_seconds": 1}}})
    assert error.field == "config.rate_limits.search.capacity"
    assert error.msg == ("config.rate_limits.search.capacity: expected an integer >= 1, "
                         f"got {capacity!r}")


@pytest.mark.parametrize("per", [0, -1, MAX_DEADLINE_S * 2, True, "1", None])
def test_a_period_out_of_its_range_is_refused_word_for_word(per: object) -> None:
    error = refused({"rate_limits": {"fetch": {"capacity": 1, "per_seconds": per}}})
    assert error.field == "config.rate_limits.fetch.per_seconds"
    assert error.msg == ("config.rate_limits.fetch.per_seconds: expected a number > 0, "
                         f"got {per!r}")


def test_rate_limits_of_the_wrong_shape_are_refused_naming_where() -> None:
    error = refused({"rate_limits": [1]})
    assert error.field == "config.rate_limits"
    assert error.msg == "config.rate_limits: expected {tool: {capacity, per_seconds}}"
    error = refused({"rate_limits": {"search": 3}})
    assert error.field == "config.rate_limits.search"
    assert error.msg == "config.rate_limits.search: expected {capacity, per_seconds}"


def test_check_config_checks_the_deadline_itself() -> None:
    assert refused({"deadline_s": -1}).field == "config.deadline_s"
    check_config({})  # nothing set: nothing to refuse


# -- deadlines, budgets and what a step leaves in the runtime -----------------------------


def test_seconds_left_is_none_without_a_deadline_and_signed_with_one() -> None:
    assert seconds_left(state(), NOW) is None
    at = (NOW + timedelta(seconds=5)).isoformat()
    assert seconds_left(state(deadline_at=at), NOW) == 5.0
    assert seconds_left(state(deadline_at=at), NOW + timedelta(seconds=7)) == -2.0


def test_the_deadline_message_names_the_deadline_the_time_and_the_setting() -> None:
    at = NOW + timedelta(seconds=5)
    late = state({"deadline_s": 5}, deadline_at=at.isoformat())
    assert deadline_envelope(late, NOW + timedelta(seconds=4)) is None
    env = deadline_envelope(late, at)  # exactly at the deadline: passed
    assert env is not None and env.e is not None
    assert (env.s, env.e.code, env.rb) == ("error", "DEADLINE_EXCEEDED", "none")
    assert env.e.msg == ("session deadline 2026-01-01T00:00:05+00:00 passed at "
                         "2026-01-01T00:00:05+00:00 (config.deadline_s = 5)")


def test_limit_envelope_names_the_first_refused_call() -> None:
    def call(n: int, ok: bool, code: str | None) -> ToolCall:
        return ToolCall(id=f"t{n}", tool="search", args={}, ok=ok, code=code,
                        message="" if ok else f"refused {n}")

    assert limit_envelope([call(1, True, None), call(2, False, "RATE_LIMITED")]) is None
    env = limit_envelope([call(1, False, "TOOL_ERROR"), call(2, False, "BUDGET_EXCEEDED"),
                          call(3, False, "DEADLINE_EXCEEDED")])
    assert env is not None and env.e is not None
    assert (env.e.code, env.e.msg) == ("BUDGET_EXCEEDED", "t2 (search): refused 2")


def test_next_runtime_keeps_the_deadline_and_takes_what_was_spent() -> None:
    before = {"deadline_at": "2026-01-02T00:00:00+00:00", "budget": {"calls": 1}}
    assert next_runtime(before, object()) == before  # a caller without a runtime state
    assert next_runtime(before, None) == before

    class Spent:
        def runtime_state(self) -> dict[str, Any]:
            return {"budget": {"calls": 3}, "limits": {}, "other": 1}

    after = next_runtime(before, Spent())
    assert after == {"deadline_at": "2026-01-02T00:00:00+00:00", "budget": {"calls": 3}}
    assert before["budget"] == {"calls": 1}  # the previous runtime is not changed


# -- the engine-wide limits -----------------------------------------------------------------


def test_build_validates_the_rate_limits_naming_the_tool() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        SessionLimits.build(rate={"search": RateLimit(capacity=0, per_seconds=1)})
    assert info.value.tool == "search"


def test_a_session_s_slots_are_the_shared_slots_of_its_tool() -> None:
    limits = SessionLimits.build(concurrency={"search": 2})
    mine = limits.executor_kwargs(state())["limits"]
    assert mine.acquire("search") and mine.in_flight("search") == 1
    assert limits.shared.in_flight("search") == 1 and mine.in_flight("fetch") == 0
    assert mine.acquire("search") and not mine.acquire("search")
    mine.release("search")
    assert limits.shared.in_flight("search") == 1 and mine.in_flight("search") == 1


def test_session_rates_override_the_engine_s_per_tool() -> None:
    limits = SessionLimits.build(rate={"search": RateLimit(5, 60), "fetch": RateLimit(2, 1)})
    config = {"rate_limits": {"search": {"capacity": 1, "per_seconds": 9}}}
    mine = limits.executor_kwargs(state(config))["limits"]
    assert mine.rate == {"search": RateLimit(1, 9.0), "fetch": RateLimit(2, 1)}


# -- skills' input limits -------------------------------------------------------------------


def test_too_large_names_field_size_unit_and_limit() -> None:
    env = too_large("claim", 1001, 1000)
    assert env.e is not None
    assert (env.s, env.e.code, env.rb) == ("error", "INPUT_TOO_LARGE", "none")
    assert env.e.msg == "claim: 1001 characters, the limit is 1000"
    env = too_large("raw", 9, 8, unit="bytes")
    assert env.e is not None and env.e.msg == "raw: 9 bytes, the limit is 8"
