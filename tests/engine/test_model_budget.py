"""The session's token budget: model usage is counted into it, a rollback or a fork never
gives it back, and a spent budget ends the session even when fallback is allowed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.testing.model_server import ScriptedModelServer


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def _engine(server: ScriptedModelServer, **profile: Any) -> Engine:
    prof = Profile(planner="model", judge="model", model_url=server.url, model="m",
                   **profile)
    return Engine.open(None, config=EngineConfig(profile=prof))


def _tokens(rev: Any) -> int:
    return int(rev.state.runtime.get("budget", {}).get("tokens", 0))


def test_usage_is_counted_and_a_rollback_gives_none_back(server: ScriptedModelServer) -> None:
    with _engine(server, max_tokens_total=10_000) as eng:
        first = eng.start("Honey never spoils.")
        head = eng.driver.run(first.sid)
        assert head.fsm == "DONE"
        spent = _tokens(head)
        events = [ev for rev in eng.store.history(first.sid) for ev in rev.events or []
                  if ev.get("tool") == "model.chat"]
        assert spent == sum(ev["usage"]["total_tokens"] for ev in events) > 0
        back = eng.driver.rollback(first.sid, 0)
        assert _tokens(back) == spent  # rewound to before any call: still spent
        again = eng.driver.run(first.sid)
        assert _tokens(again) > spent


def test_a_fork_keeps_what_its_history_spent(server: ScriptedModelServer) -> None:
    with _engine(server) as eng:
        first = eng.start("Honey never spoils.")
        head = eng.driver.run(first.sid)
        forked = eng.driver.fork(first.sid, 1)  # after the planner's call
        assert _tokens(forked) > 0 and _tokens(forked) == _tokens(
            eng.store.get(first.sid, 1))
        assert _tokens(eng.store.head(first.sid)) == _tokens(head)  # the original keeps its


def test_a_spent_budget_fails_the_session_even_with_fallback(
    server: ScriptedModelServer,
) -> None:
    with _engine(server, max_tokens_total=0, on_model_error="fallback") as eng:
        head = eng.driver.run(eng.start("Honey never spoils.").sid)
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == "TOKEN_BUDGET_EXCEEDED"
    assert server.requests == []


def test_the_session_stores_the_prompt_digests_and_the_model_not_the_key(
    server: ScriptedModelServer,
) -> None:
    from claimfsm.engine.model_profile import prompt_digests

    with _engine(server, api_key_env="SOME_VAR") as eng:
        first = eng.start("Honey never spoils.")
    config = first.state.config
    assert config["prompts"] == {"planner": prompt_digests()["planner"],
                                 "judge": prompt_digests()["judge"]}
    assert config["profile"]["api_key_env"] == "SOME_VAR"
    assert config["profile"]["model_url"] == server.url


def test_a_default_profile_stores_what_it_always_stored() -> None:
    assert Profile().config()["profile"] == {"retrieval": "lexical", "judge": "lexical",
                                             "stance_model": None}
    assert "prompts" not in Profile().config()
