"""Plan steps (seed 004): the contract, validation before execution, done checks."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import FixedClock
from claimfsm.skills.plan_steps import (
    OutputPathMissing,
    PlanError,
    PlanStep,
    check_plan,
    expected_key,
    extract,
    nest,
    runnable,
    satisfied,
    steps_for,
    validate_params,
)
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.core import (
    ParameterError,
    QueryTypeUnsupported,
    Tool,
    ToolError,
    ToolResult,
)
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.registry import ToolRegistry


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return ToolRegistry(builtin_tools(EvidenceIndex.open(":memory:")))


def req(rid: str, tool: str, sub: str = "s1", **args: Any) -> dict[str, Any]:
    return {"id": rid, "tool": tool, "args": args, "for": sub}


def test_expected_keys_address_the_request_content() -> None:
    a = expected_key("search", {"q": "x", "lim": 4, "src": "wiki"})
    assert a == expected_key("search", {"src": "wiki", "lim": 4, "q": "x"})  # order-free
    assert a != expected_key("search", {"q": "x", "lim": 5, "src": "wiki"})
    assert a != expected_key("web_search", {"q": "x", "lim": 4, "src": "wiki"})
    assert a.startswith("search:")


def test_output_path_extracts_and_nests_back() -> None:
    value = {"hits": [{"doc_id": "d"}], "other": 1}
    assert extract(value, ["hits"]) == [{"doc_id": "d"}]
    assert extract(value, None) == value
    assert nest(["hits"], [1]) == {"hits": [1]}
    assert nest(["a", "b"], 2) == {"a": {"b": 2}}
    with pytest.raises(OutputPathMissing) as info:
        extract(value, ["facts"])
    assert info.value.code == "OUTPUT_PATH_MISSING" and "facts" in info.value.user_message()


def test_steps_from_requests_carry_the_contract() -> None:
    steps = steps_for([req("t1", "search", q="a", lim=4, src="wiki"),
                       req("t2", "kb_lookup", "s2", q="b", lim=3, src="kb"),
                       req("t3", "my_tool", q="c")])
    assert [s.status for s in steps] == ["pending"] * 3
    assert [s.output_path for s in steps] == [["hits"], ["facts"], None]
    assert steps[0].expected_key == expected_key("search", {"q": "a", "lim": 4, "src": "wiki"})
    assert all(s.dependencies == [] and s.done_check == "present" for s in steps)
    dumped = steps[0].dump()
    assert dumped["for"] == "s1" and PlanStep.model_validate(dumped) == steps[0]


def test_follow_up_steps_depend_on_their_subclaims_earlier_steps() -> None:
    first = steps_for([req("t1", "search", q="a"), req("t2", "search", "s2", q="b")])
    follow = steps_for([req("t3", "kb_lookup", "s1", q="a")], first,
                       reasons={"t3": "keywords not covered by results: a"})
    assert follow[0].dependencies == ["t1"]
    assert follow[0].description == "keywords not covered by results: a"


def test_runnable_waits_for_dependencies_to_finish() -> None:
    steps = steps_for([req("t1", "search", q="a")])
    steps += steps_for([req("t2", "kb_lookup", q="a")], steps, reasons={"t2": "why"})
    assert [s.id for s in runnable(steps)] == ["t1"]
    done = [steps[0].model_copy(update={"status": "failed"}), steps[1]]
    assert [s.id for s in runnable(done)] == ["t2"]  # failed counts as finished
    assert runnable([s.model_copy(update={"status": "completed"}) for s in steps]) == []


def test_done_check_is_the_expected_key_being_present() -> None:
    step = steps_for([req("t1", "search", q="a")])[0]
    assert not satisfied(step, {})
    assert satisfied(step, {step.expected_key: []})
    assert not satisfied(step.model_copy(update={"done_check": "never"}), {step.expected_key: []})


def test_check_plan_refuses_unknown_or_later_dependencies_and_duplicates() -> None:
    a, b = steps_for([req("t1", "search", q="a"), req("t2", "search", q="b")])
    check_plan([a, b])
    with pytest.raises(PlanError, match=r"steps\.0\.dependencies: 't2'"):
        check_plan([a.model_copy(update={"dependencies": ["t2"]}), b])
    with pytest.raises(PlanError, match="duplicate step id"):
        check_plan([a, a])


def test_validation_names_the_field(registry: ToolRegistry) -> None:
    with pytest.raises(ParameterError) as info:
        validate_params(registry, "search", {"q": "x", "lim": 80, "src": "wiki"},
                        where="tr.t1.args")
    assert info.value.code == "BAD_ARGS"
    assert info.value.user_message().startswith("tr.t1.args.lim: ")
    with pytest.raises(ParameterError) as extra:
        validate_params(registry, "search", {"q": "x", "src": "wiki", "extra": 1},
                        where="tr.t1.args")
    assert extra.value.field == "tr.t1.args.extra"
    assert extra.value.user_message() == "tr.t1.args.extra: Extra inputs are not permitted"


def test_an_unsupported_query_type_lists_the_supported_ones(registry: ToolRegistry) -> None:
    with pytest.raises(QueryTypeUnsupported) as info:
        validate_params(registry, "search", {"q": "x", "src": "kb"})
    assert info.value.supported == ("wiki", "web", "news")
    assert "'kb'" in info.value.user_message()
    assert "supported types: wiki, web, news" in info.value.user_message()


def test_an_unknown_tool_lists_the_known_ones(registry: ToolRegistry) -> None:
    with pytest.raises(ToolError) as info:
        validate_params(registry, "serch", {"q": "x"})
    assert info.value.code == "UNKNOWN_TOOL" and "search, web_search" in info.value.msg


# -- inside a session -----------------------------------------------------------------------


class WideParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str
    lim: int
    src: Literal["corp"]  # a query type the planner never asks for


class Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hits: list[dict[str, Any]]


def test_a_bad_step_fails_the_session_before_any_tool_runs() -> None:
    ran: list[str] = []

    def handle(params: WideParams, *, context: Any) -> ToolResult[Out]:
        ran.append(params.q)
        return ToolResult.ok(Out(hits=[]))

    corp = Tool(name="corp_search", description="Search the corporate wiki.",
                params=WideParams, result=Out, handler=handle)
    config = EngineConfig(clock=FixedClock(), extra_tools=[corp],
                          bind={"RETRIEVAL": ["corp_search"]})
    with Engine.open(None, config=config) as eng:
        head = eng.driver.run(eng.driver.start("NASA landed on the Moon in 1969.").sid)
        history = eng.store.history(head.sid)
    assert head.fsm == "FAILED"
    assert head.state.error is not None and head.state.error["code"] == "BAD_ARGS"
    # Names the step, its tool and the field; nothing ran, not even the good requests.
    assert head.state.error["msg"].startswith("t2 (corp_search): tr.t2.args.src: ")
    assert ran == []
    assert not any(e["type"] == "ToolInvoked" for r in history for e in r.events)
    assert head.state.steps == [] and head.state.tool_requests == []


def test_steps_are_recorded_with_status_key_and_outputs() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        head = eng.driver.run(eng.driver.start("NASA landed on the Moon in 1969.").sid)
        history = eng.store.history(head.sid)
    steps = head.state.steps
    assert steps and all(s["status"] == "completed" for s in steps)
    first = steps[0]
    assert first["tool"] == "search" and first["output_path"] == ["hits"]
    assert first["expected_key"] == expected_key(first["tool"], first["params"])
    # The result is in memory under the expected key: the part at output_path.
    rec = next(r for r in head.state.tool_results if r["id"] == first["id"])
    assert head.state.outputs[first["expected_key"]] == rec["value"]["hits"]
    # completed_rev names the revision that ran the step, whose events show the call.
    ran = history[first["completed_rev"]]
    assert [e["id"] for e in ran.events if e["type"] == "ToolInvoked"] == [first["id"]]


def test_a_step_whose_result_is_already_there_is_skipped_not_rerun() -> None:
    claim = "Canberra is the capital of Australia and Canberra is the capital of Australia."
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        head = eng.driver.run(eng.driver.start(claim).sid)
        history = eng.store.history(head.sid)
    t1, t2 = head.state.steps[:2]
    assert t1["expected_key"] == t2["expected_key"] and t1["for"] != t2["for"]
    assert (t1["status"], t2["status"]) == ("completed", "skipped")
    invoked = [e for r in history for e in r.events if e["type"] == "ToolInvoked"]
    assert [e["id"] for e in invoked if e["tool"] == "kb_lookup"] == ["t1"]
    # The skipped step still gives its subclaim the shared result.
    recs = {r["id"]: r for r in head.state.tool_results}
    assert recs["t2"]["ok"] and recs["t2"]["value"] == recs["t1"]["value"]
    assert recs["t2"]["msg"].startswith("skipped: ")
    assert head.fsm == "DONE"
