"""Session limit configuration: validation at start, and what the executor factory loads
from a session (budget, buckets, deadline; concurrency shared across sessions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from claimfsm.engine.limits import SessionConfigError, SessionLimits
from claimfsm.engine.runtime import Engine, executor_factory
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.model import SessionState

BASE = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("config, key", [
    ({"deadline_s": 0}, "config.deadline_s"),
    ({"deadline_s": "soon"}, "config.deadline_s"),
    ({"max_tool_calls": -1}, "config.max_tool_calls"),
    ({"max_tool_calls": 2.5}, "config.max_tool_calls"),
    ({"rate_limits": {"search": {"capacity": 0, "per_seconds": 1}}},
     "config.rate_limits.search.capacity"),
    ({"rate_limits": {"search": {"capacity": 1}}}, "config.rate_limits.search.per_seconds"),
])
def test_bad_limit_config_is_refused_at_start_naming_the_key(
    config: dict[str, Any], key: str
) -> None:
    with Engine.open(None) as eng, pytest.raises(SessionConfigError) as info:
        eng.driver.start("c", config=config)
    assert info.value.code == "BAD_CONFIG" and info.value.msg.startswith(key + ":")


def test_concurrency_slots_are_shared_by_every_session_of_a_factory() -> None:
    limits = SessionLimits.build(concurrency={"search": 1})
    a = limits.executor_kwargs(SessionState(sid="a", claim="c", fsm="RETRIEVAL"))["limits"]
    b = limits.executor_kwargs(SessionState(sid="b", claim="c", fsm="RETRIEVAL"))["limits"]
    assert a.acquire("search") and not b.acquire("search")
    a.release("search")
    assert b.acquire("search")


def test_the_factory_loads_budget_and_buckets_from_the_session() -> None:
    state = SessionState(
        sid="s", claim="c", fsm="RETRIEVAL",
        config={"max_tool_calls": 5, "rate_limits": {"search": {"capacity": 2,
                                                                 "per_seconds": 60}}},
        runtime={"budget": {"calls": 4},
                 "limits": {"search": {"tokens": 0.0, "at": BASE.isoformat()}},
                 "deadline_at": (BASE + timedelta(seconds=9)).isoformat()},
    )
    registry = ToolRegistry(builtin_tools(EvidenceIndex.open(":memory:")))
    ex: Any = executor_factory(registry)(state, FixedClock(current=BASE))
    assert ex.budget.max_calls == 5 and ex.budget.calls == 4
    assert ex.limits.tokens("search", BASE) == 0.0
    assert ex.deadline == BASE + timedelta(seconds=9)
