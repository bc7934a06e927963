"""The model-backed judge: a stance per subclaim citing sentence ids; a citation outside
the session's evidence is rejected; no evidence means no call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from claimfsm.skills import model_judge, stance_judge
from claimfsm.skills.context import SkillContext, SystemClock
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.model_chat import model_tool
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.testing.model_server import ScriptedModelServer

ST = {"sid": "s", "rev": 5, "fsm": "VERIFY"}
EVIDENCE = {"s1": [{"id": "moon#0", "doc_id": "moon", "text": "Apollo 11 landed in 1969.",
                    "source": "wiki", "score": 1.0}]}
CLAIMS = [{"id": "s1", "c": "NASA landed on the Moon in 1969."},
          {"id": "s2", "c": "Honey never spoils."}]


@pytest.fixture
def answers() -> list[Any]:
    return []


@pytest.fixture
def server(answers: list[Any]) -> Iterator[ScriptedModelServer]:
    def answer(req: dict[str, Any]) -> Any:
        return answers.pop(0) if answers else {"judgments": [
            {"id": "s1", "verdict": "SUPPORTS", "confidence": 0.75, "cites": ["moon#0"]}]}

    with ScriptedModelServer(answer) as srv:
        yield srv


def _run(server: ScriptedModelServer, on_error: str = "fail") -> Any:
    tools = Executor(ToolRegistry([model_tool()]), clock=SystemClock())
    inp = {"claims": CLAIMS, "evidence": EVIDENCE, "st": ST,
           "model": {"url": server.url, "model": "m", "on_error": on_error}}
    return model_judge.SKILL.run(inp, SkillContext(tools=tools))


def test_the_model_judges_and_a_subclaim_without_evidence_is_not_asked(server) -> None:
    env = _run(server)
    assert env.s == "ok" and env.d is not None
    first, second = env.d["judgments"]
    assert first["verdict"] == "SUPPORTS" and first["cites"] == ["moon#0"]
    assert first["reasons"] == ["model judge (m)"]
    assert second["verdict"] == "NOT_ENOUGH_INFO" and second["cites"] == []
    assert len(server.requests) == 1
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    one = schema["$defs"]["ModelJudgment"]["properties"]
    assert one["id"]["enum"] == ["s1"] and one["cites"]["items"]["enum"] == ["moon#0"]


def test_a_citation_outside_the_evidence_is_rejected(server, answers) -> None:
    answers.extend([{"judgments": [{"id": "s1", "verdict": "REFUTES", "confidence": 1,
                                    "cites": ["made-up#3"]}]}] * 3)
    env = _run(server)
    assert env.s == "error" and env.e is not None and env.e.code == "MODEL_BAD_OUTPUT"
    assert "made-up#3" in env.e.msg and env.rb == "state"


def test_a_verdict_must_cite(server, answers) -> None:
    answers.append({"judgments": [{"id": "s1", "verdict": "SUPPORTS", "confidence": 1,
                                   "cites": []}]})
    env = _run(server)
    assert env.s == "ok" and len(server.requests) == 2  # repaired on the second answer


def test_the_fallback_is_the_lexical_judge_saying_why(server, answers) -> None:
    answers.extend(["{}"] * 3)
    env = _run(server, on_error="fallback")
    lexical = stance_judge.SKILL.run({"claims": CLAIMS, "evidence": EVIDENCE, "st": ST},
                                     SkillContext())
    assert env.s == "ok" and env.d is not None and lexical.d is not None
    assert [j["verdict"] for j in env.d["judgments"]] == [
        j["verdict"] for j in lexical.d["judgments"]]
    assert all("model judge failed (MODEL_BAD_OUTPUT" in j["reasons"][-1]
               for j in env.d["judgments"])


def test_without_a_model_it_is_the_stance_judge() -> None:
    inp = {"claims": CLAIMS, "evidence": EVIDENCE, "st": ST}
    assert model_judge.SKILL.run(inp, SkillContext()) == stance_judge.SKILL.run(
        inp, SkillContext())
