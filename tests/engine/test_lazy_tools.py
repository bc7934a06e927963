"""The default tool runtime loads when a step first uses it (claimfsm.engine.lazy_tools),
and sessions run by it are the sessions the eagerly built executor ran: same revisions,
the same limits, budgets and policy state, also in steps that call no tool."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.lazy_tools import LazySession, LazyTools
from claimfsm.engine.limits import SessionLimits
from claimfsm.engine.runtime import Engine, default_policies, executor_factory
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.model import SessionState
from tests.support.spies import modules_loaded_by

CLAIMS = ("NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin.")
CONFIGS: tuple[dict[str, Any], ...] = (
    {},
    {"max_tool_calls": 40, "deadline_s": 3600},
    {"rate_limits": {"search": {"capacity": 2, "per_seconds": 30}}, "max_tool_calls": 9},
)


def _revisions(lazy: bool, claim: str, config: dict[str, Any]) -> list[str]:
    # The eager path is taken whenever a tool setting is given: the default policies,
    # given explicitly, are the same policies.
    extra: dict[str, Any] = {} if lazy else {"policies": default_policies()}
    with Engine.open(None, config=EngineConfig(clock=FixedClock(tick=timedelta(seconds=7)),
                                               **extra)) as eng:
        assert isinstance(eng.driver.tools.inner, LazyTools) is lazy  # type: ignore[union-attr]
        sid = eng.start(claim, config=config).sid
        while eng.store.head(sid).fsm not in ("DONE", "FAILED"):
            eng.driver.step(sid)
        out = []
        for rev in eng.store.history(sid):
            text = orjson.dumps(rev.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
            # a tool call's wall time, the one thing that is not the same run to run
            out.append(re.sub(rb'"duration_ms":[0-9.]+', b"D", text).replace(sid.encode(), b"S"))
        return [o.decode() for o in out]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("claim", CLAIMS)
def test_a_session_on_the_lazy_runtime_is_the_session_on_the_eager_one(
        claim: str, config: dict[str, Any]) -> None:
    lazy, eager = _revisions(True, claim, config), _revisions(False, claim, config)
    assert len(lazy) >= 5 and lazy == eager  # a budget of 9 calls ends one in FAILED


def _state(**fields: Any) -> SessionState:
    base = {"sid": "s1", "claim": "c", "fsm": "PARSE_CLAIM",
            "config": {"max_tool_calls": 5,
                       "rate_limits": {"search": {"capacity": 3, "per_seconds": 60}}}}
    return SessionState.model_validate({**base, **fields})


@pytest.mark.parametrize("runtime", [
    {},
    {"budget": {"calls": 3}},
    {"budget": {"calls": 2, "tokens": 70},
     "limits": {"search": {"tokens": 1.5, "at": "2026-01-01T00:00:05+00:00"}}},
])
@pytest.mark.parametrize("policy", [{}, {"fetch_before_extract": {
    "invoked_tools": ["page_fetch"], "invoked_keys": [["page_fetch", "d1"]]}}])
def test_a_step_that_calls_nothing_reports_what_an_untouched_executor_does(
        runtime: dict[str, Any], policy: dict[str, Any]) -> None:
    index = EvidenceIndex.open(":memory:")
    try:
        registry = ToolRegistry(builtin_tools(index))
        state = _state(runtime=runtime, policy=policy)
        clock = FixedClock(current=datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
        eager = executor_factory(registry)(state, clock)
        built: list[int] = []

        def build(st: SessionState, ck: Any, kwargs: dict[str, Any]) -> Any:
            built.append(1)
            return eager

        lazy = LazyTools(SessionLimits.build(), build)(state, clock)
        assert isinstance(lazy, LazySession)
        assert lazy.calls == eager.calls == [] and lazy.events == eager.events == []
        assert lazy.policy_state == eager.policy_state
        assert lazy.policy_state is not state.policy  # a copy, as the executor's
        for name, value in state.policy.items():  # all the way down
            assert lazy.policy_state[name] is not value
        assert lazy.runtime_state() == eager.runtime_state()  # type: ignore[attr-defined]
        assert not built and not lazy.built
        assert lazy.registry is registry and built == [1]  # anything else: the executor
        assert lazy.runtime_state() == eager.runtime_state()  # type: ignore[attr-defined]
    finally:
        index.close()


def test_a_malformed_stored_limit_still_fails_when_the_step_begins() -> None:
    bad = _state(config={"max_tool_calls": -1})
    with pytest.raises(Exception, match="max_tool_calls"):
        LazyTools(SessionLimits.build(), lambda *a: None)(bad, FixedClock())  # type: ignore


def test_rate_limits_given_to_the_engine_are_checked_when_it_opens() -> None:
    from claimfsm.skills.tools.core import ToolDefinitionError

    with pytest.raises(ToolDefinitionError):
        Engine.open(None, config=EngineConfig(rate_limits={"search": RateLimit(0, 1.0)}))


_RUNTIME = {"claimfsm.skills.tools.executor", "claimfsm.skills.tools.registry",
            "claimfsm.skills.tools.builtin", "claimfsm.skills.tools.model_chat",
            "claimfsm.skills.tools.model_types", "importlib.resources"}


def test_only_the_steps_that_use_tools_load_the_tool_runtime(tmp_path: Any) -> None:
    db = str(tmp_path / "demo.db")
    with Engine.open(db) as eng:
        sid = eng.start(CLAIMS[0]).sid
    loaded_by: dict[str, bool] = {}
    for _ in range(12):
        with Engine.open(db, config=EngineConfig(seed=False)) as eng:
            before = eng.store.head(sid)
        if before.fsm in ("DONE", "FAILED"):
            break
        loaded = modules_loaded_by("step", sid, "--db", db)
        with Engine.open(db, config=EngineConfig(seed=False)) as eng:
            after = eng.store.head(sid)
        called = any(e.get("type") == "ToolCalls" for e in after.events)
        runtime = _RUNTIME - {"importlib.resources"} <= loaded
        loaded_by[f"{before.rev}:{before.fsm}"] = runtime
        if called:
            assert runtime
        if before.fsm in ("PARSE_CLAIM", "AGGREGATE"):  # never a tool: none of it loads
            assert not loaded & _RUNTIME, before.fsm
    assert True in loaded_by.values() and False in loaded_by.values(), loaded_by


def test_threads_asking_at_once_get_one_executor() -> None:
    import threading
    import time

    built: list[object] = []

    def build(st: SessionState, ck: Any, kwargs: dict[str, Any]) -> Any:
        time.sleep(0.01)  # long enough for the others to arrive meanwhile
        built.append(object())
        return built[-1]

    session = LazyTools(SessionLimits.build(), build)(_state(), FixedClock())
    assert isinstance(session, LazySession)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(session.executor()))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and got == built * 8
