"""Model-backed sessions against a real OpenAI-compatible server process: llama.cpp's
server (llama-cpp-python) on 127.0.0.1 with a tiny random-weight GGUF model the test
writes itself; a fault-injecting proxy in front of it for the failures."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.skills.model_call import prompt_digests
from claimfsm.state.model import Revision
from tests.support.fault_proxy import FaultProxy
from tests.support.llama_server import LlamaServer, start


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start(tmp_path_factory.mktemp("llama"))
    yield server
    server.stop()


def _run(url: str, model: str, claim: str, *, config: dict[str, Any] | None = None,
         **profile: Any) -> tuple[Revision, list[Revision]]:
    prof = Profile(model_url=url, model=model, **{"planner": "model", "judge": "model",
                                                  "on_model_error": "fail", **profile})
    with Engine.open(None, config=EngineConfig(profile=prof)) as eng:
        first = eng.start(claim, config=config)
        head = eng.driver.run(first.sid)
        return head, list(eng.store.history(first.sid))


def _model_events(history: list[Revision]) -> list[dict[str, Any]]:
    return [ev for rev in history for ev in rev.events or []
            if ev.get("type") == "ToolInvoked" and ev.get("tool") == "model.chat"]


def _no_rev_twice(history: list[Revision]) -> None:
    revs = [r.rev for r in history]
    assert revs == list(range(len(revs)))  # each committed once, in order
    assert all((r.envelope or {}).get("e", {}) is None or
               (r.envelope or {}).get("e", {}).get("code") != "INTERNAL" for r in history)


def test_a_session_plans_and_judges_with_the_model(llama: LlamaServer) -> None:
    head, history = _run(llama.url, llama.model, "Sydney is the capital of Australia.")
    assert head.fsm == "DONE", head.state.error
    plan = history[1].envelope["d"]  # type: ignore[index]
    assert plan["model"]["via"] == "model"
    assert plan["model"]["prompt"] == prompt_digests()["planner"]
    assert head.state.config["prompts"] == {k: prompt_digests()[k] for k in ("planner", "judge")}
    judged = next(r for r in history if r.skill == "stance_judge").envelope["d"]  # type: ignore[index]
    evidence = {e["id"] for items in head.state.evidence.values() for e in items}
    for j in judged["judgments"]:
        assert set(j["cites"]) <= evidence
        assert j["verdict"] == "NOT_ENOUGH_INFO" or j["cites"]
    events = _model_events(history)
    assert len(events) == 2 and all(ev["ok"] for ev in events)
    used = sum(ev["usage"]["total_tokens"] for ev in events)
    assert used > 0 and head.state.runtime["budget"]["tokens"] == used
    for ev in events:
        assert set(ev["blobs"]) == {ev["request"], ev["response"]}
    _no_rev_twice(history)


def test_the_rules_reject_a_plan_that_drops_the_claim_s_number(llama: LlamaServer) -> None:
    # The random model never writes "1969": three answers, then the card's error.
    head, history = _run(llama.url, llama.model, "NASA landed on the Moon in 1969.")
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == "MODEL_BAD_OUTPUT"
    assert "1969" in head.state.error["msg"]
    assert len(_model_events(history)) == 3
    assert history[-1].envelope is not None and history[-1].envelope["rb"] == "state"


def test_the_fallback_plans_by_the_rules_and_says_so(llama: LlamaServer) -> None:
    head, history = _run(llama.url, llama.model, "NASA landed on the Moon in 1969.",
                         on_model_error="fallback", judge="lexical")
    assert head.fsm == "DONE"
    note = history[1].envelope["d"]["model"]  # type: ignore[index]
    assert note["via"] == "fallback" and note["code"] == "MODEL_BAD_OUTPUT"
    assert any("1969" in q for plan in head.state.plans for q in plan["q"])


def test_keyword_follow_ups_run_when_the_model_s_queries_miss(llama: LlamaServer) -> None:
    head, _ = _run(llama.url, llama.model, "Honey never spoils.", judge="lexical")
    assert head.fsm == "DONE"
    planned = " ".join(q for plan in head.state.plans for q in plan["q"]).lower()
    assert "honey" not in planned  # the random model's queries miss the keywords ...
    assert head.state.followups  # ... and the engine's follow-ups still ran
    assert any("honey" in str(tr["args"]).lower() for tr in head.state.tool_requests)


def test_the_token_budget_ends_the_session(llama: LlamaServer) -> None:
    head, history = _run(llama.url, llama.model, "Sydney is the capital of Australia.",
                         max_tokens_total=100)
    # The first call starts within the budget and spends it; VERIFY's call is refused.
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == "TOKEN_BUDGET_EXCEEDED"
    assert head.state.runtime["budget"]["tokens"] > 100
    _no_rev_twice(history)


@pytest.mark.parametrize(("faults", "code"), [
    (["429"] * 3, "MODEL_RATE_LIMITED"),
    (["500"] * 3, "MODEL_UNREACHABLE"),
    (["stall"], "MODEL_TIMEOUT"),
    (["cut"], "MODEL_BAD_RESPONSE"),
    (["html"], "MODEL_BAD_RESPONSE"),
    (["huge"], "MODEL_RESPONSE_TOO_LARGE"),
    (["schema"] * 3, "MODEL_BAD_OUTPUT"),
])
def test_each_fault_ends_in_its_code_within_the_deadline(
    llama: LlamaServer, faults: list[str], code: str
) -> None:
    # A stalled socket waits for the session's deadline; the others end before it.
    deadline_s = 4 if faults == ["stall"] else 90
    with FaultProxy(llama.url, faults) as proxy:
        started = time.monotonic()
        head, history = _run(proxy.url, llama.model, "Sydney is the capital of Australia.",
                             config={"deadline_s": deadline_s})
        took = time.monotonic() - started
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == code, head.state.error
    assert took < deadline_s + 2
    if faults == ["stall"]:
        assert took >= deadline_s - 1  # it waited for the deadline, and no longer
    assert len(history) == 2  # revision 0 and the failed step: nothing committed twice
    _no_rev_twice(history)


def test_a_429_with_retry_after_is_waited_out_and_the_session_goes_on(
    llama: LlamaServer,
) -> None:
    with FaultProxy(llama.url, ["429"], retry_after="1") as proxy:
        started = time.monotonic()
        head, history = _run(proxy.url, llama.model, "Sydney is the capital of Australia.")
        assert proxy.seen[:2] == ["429", "pass"]
    assert head.fsm == "DONE" and time.monotonic() - started >= 1
    first = _model_events(history)[0]
    assert first["ok"]


def test_the_model_server_is_real(llama: LlamaServer, tmp_path: Path) -> None:
    # Not a stub: a llama.cpp process that loaded the GGUF file written for this run.
    assert llama.process.poll() is None
    assert "llama" in llama.log.read_text(errors="replace").lower()
