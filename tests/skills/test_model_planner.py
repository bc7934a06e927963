"""The model-backed planner: the rules check the model's plan, bad answers are repaired,
then fail with the card's rb or fall back to the rules (recorded as such)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from claimfsm.skills import model_planner, parse_claim
from claimfsm.skills.context import SkillContext, SystemClock
from claimfsm.skills.evidence_query_plan import Claim, Plan
from claimfsm.skills.model_call import REPAIRS, prompt, prompt_digests
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.model_chat import model_tool
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.testing.model_server import ScriptedModelServer

ST = {"sid": "s", "rev": 0, "fsm": "PARSE_CLAIM"}
CLAIM = "NASA landed on the Moon in 1969."


def _plan(q: list[str], pid: str = "s1") -> dict[str, Any]:
    return {"plans": [{"id": pid, "q": q, "src": ["wiki"], "lim": 4}]}


@pytest.fixture
def answers() -> list[Any]:
    return []


@pytest.fixture
def server(answers: list[Any]) -> Iterator[ScriptedModelServer]:
    def answer(req: dict[str, Any]) -> Any:
        return answers.pop(0) if answers else _plan(["NASA Moon landing 1969"])

    with ScriptedModelServer(answer) as srv:
        yield srv


def _run(server: ScriptedModelServer, on_error: str = "fail") -> tuple[Any, Executor]:
    tools = Executor(ToolRegistry([model_tool()]), clock=SystemClock())
    inp = {"claim": CLAIM, "st": ST, "model": {"url": server.url, "model": "m",
                                               "on_error": on_error, "prompt": "sha256:p"}}
    return model_planner.SKILL.run(inp, SkillContext(tools=tools)), tools


def test_the_model_s_plan_is_the_step_s_plan(server: ScriptedModelServer) -> None:
    env, _ = _run(server)
    assert env.s == "ok" and env.d is not None
    assert env.d["plans"] == [{"id": "s1", "q": ["NASA Moon landing 1969"], "src": ["wiki"],
                               "lim": 4}]
    assert env.d["model"] == {"via": "model", "prompt": "sha256:p", "code": None, "msg": None}
    sent = server.requests[0]
    assert sent["messages"][0]["content"] == prompt("planner")
    assert "Evidence Query Planner" in sent["messages"][0]["content"]  # the card is the prompt
    assert orjson.loads(sent["messages"][1]["content"])["subclaims"] == [
        {"id": "s1", "c": CLAIM}]
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema["$defs"]["Plan"]["properties"]["id"]["enum"] == ["s1"]


def test_a_broken_answer_is_repaired(server: ScriptedModelServer, answers: list[Any]) -> None:
    answers.append(_plan(["NASA Moon landing"]))  # drops 1969
    env, _ = _run(server)
    assert env.s == "ok" and len(server.requests) == 2
    repair = server.requests[1]["messages"][-1]["content"]
    assert "1969" in repair and "not valid" in repair


def test_an_answer_that_stays_broken_fails_with_the_card_s_rb(
    server: ScriptedModelServer, answers: list[Any]
) -> None:
    answers.extend([_plan(["one two three four five six seven eight 1969"])] * 3)
    env, _ = _run(server)
    assert env.s == "error" and env.e is not None and env.e.code == "MODEL_BAD_OUTPUT"
    assert env.rb == parse_claim.SKILL.rb_on_error == "state"
    assert "9 words" in env.e.msg and len(server.requests) == 1 + REPAIRS


def test_the_fallback_plans_by_the_rules_and_records_why(
    server: ScriptedModelServer, answers: list[Any]
) -> None:
    answers.extend(["not json at all"] * 3)
    env, _ = _run(server, on_error="fallback")
    ruled = parse_claim.SKILL.run({"claim": CLAIM, "st": ST}, SkillContext())
    assert env.s == "ok" and env.d is not None and ruled.d is not None
    assert env.d["plans"] == ruled.d["plans"]
    assert env.d["model"]["via"] == "fallback" and env.d["model"]["code"] == "MODEL_BAD_OUTPUT"


def test_without_a_model_it_is_parse_claim() -> None:
    inp = {"claim": CLAIM, "st": ST}
    assert model_planner.SKILL.run(inp, SkillContext()) == parse_claim.SKILL.run(
        inp, SkillContext())


@pytest.mark.parametrize(("q", "problem"), [
    (["NASA Moon 1969"], None),
    (["NASA Moon"], "the number '1969'"),
    (["a b c d e f g h 1969"], "9 words"),
    (["  ", "1969"], "empty query"),
])
def test_the_planner_s_rules(q: list[str], problem: str | None) -> None:
    claims = [Claim(id="s1", c=CLAIM)]
    answer = model_planner.Answer(plans=[Plan(id="s1", q=q, src=["wiki"], lim=3)])
    found = model_planner.check_plans(claims, answer)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_the_plan_must_cover_every_subclaim_in_order() -> None:
    claims = [Claim(id="s1", c="A."), Claim(id="s2", c="B.")]
    answer = model_planner.Answer(plans=[Plan(id="s2", q=["B"], src=["wiki"], lim=3)])
    assert "one plan per subclaim" in (model_planner.check_plans(claims, answer) or "")


def test_prompt_digests_are_the_files_digests() -> None:
    import hashlib

    digests = prompt_digests()
    assert set(digests) == {"planner", "judge"}
    for name, digest in digests.items():
        assert digest == "sha256:" + hashlib.sha256(prompt(name).encode()).hexdigest()
