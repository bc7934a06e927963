"""Policies: fail-closed checks before a tool runs, JSON state updated after success."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.policies import (
    FetchBeforeExtractPolicy,
    PolicyDecision,
    SequentialDependencyPolicy,
    ToolPolicy,
)
from claimfsm.skills.tools.registry import ToolRegistry


class Empty(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DocParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    doc_id: str


class UrlParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    url: str


class Page(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    doc_id: str


class Done(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ran: str


RAN: list[str] = []


def simple(name: str) -> Tool[Any, Any]:
    def handler(params: Empty, *, context: ToolContext) -> ToolResult[Done]:
        RAN.append(name)
        return ToolResult.ok(Done(ran=name))

    return Tool(name=name, description=f"{name} step", params=Empty, result=Done, handler=handler)


def fetch_handler(params: DocParams, *, context: ToolContext) -> ToolResult[Page]:
    RAN.append(f"fetch:{params.doc_id}")
    if params.doc_id == "missing":
        return ToolResult.error("no such page", code="NOT_FOUND")
    return ToolResult.ok(Page(doc_id=params.doc_id))


def extract_handler(params: DocParams, *, context: ToolContext) -> ToolResult[Done]:
    RAN.append(f"extract:{params.doc_id}")
    return ToolResult.ok(Done(ran=params.doc_id))


def url_fetch(params: UrlParams, *, context: ToolContext) -> ToolResult[Page]:
    return ToolResult.ok(Page(doc_id="doc-from-" + params.url))


PAGE_FETCH = Tool(
    name="page_fetch", description="Fetch a page.", params=DocParams, result=Page,
    handler=fetch_handler,
)
EXTRACT = Tool(
    name="sentence_extract", description="Extract sentences.", params=DocParams, result=Done,
    handler=extract_handler,
)


def test_builtin_policies_satisfy_the_protocol() -> None:
    assert isinstance(SequentialDependencyPolicy(), ToolPolicy)
    assert isinstance(FetchBeforeExtractPolicy(), ToolPolicy)


def test_sequential_dependency_denies_until_prerequisites_succeed() -> None:
    RAN.clear()
    policy = SequentialDependencyPolicy(dependencies={"deploy": frozenset({"build", "lint"})})
    ex = Executor(
        ToolRegistry([simple("lint"), simple("build"), simple("deploy")]),
        clock=FixedClock(), policies=[policy],
    )
    denied = ex.call("deploy", {})
    assert (denied.ok, denied.code) == (False, "POLICY_DENIED")
    assert denied.message == "deploy: requires build, lint to have succeeded first"
    assert "deploy" not in RAN  # fail-closed: the handler never ran
    assert ex.call("lint", {}).ok
    still = ex.call("deploy", {})
    assert still.message == "deploy: requires build to have succeeded first"
    assert ex.call("build", {}).ok
    assert ex.call("deploy", {}).ok
    assert RAN == ["lint", "build", "deploy"]
    assert ex.policy_state == {
        "sequential_dependency": {
            "invoked_tools": ["lint", "build", "deploy"], "invoked_keys": [],
        }
    }


def test_fetch_before_extract_is_keyed_by_document() -> None:
    RAN.clear()
    ex = Executor(
        ToolRegistry([PAGE_FETCH, EXTRACT]), clock=FixedClock(),
        policies=[FetchBeforeExtractPolicy()],
    )
    denied = ex.call("sentence_extract", {"doc_id": "d1"})
    assert denied.code == "POLICY_DENIED"
    assert "'d1'" in denied.message and "page_fetch" in denied.message
    assert ex.call("page_fetch", {"doc_id": "d1"}).ok
    assert ex.call("sentence_extract", {"doc_id": "d1"}).ok
    other = ex.call("sentence_extract", {"doc_id": "d2"})
    assert other.code == "POLICY_DENIED" and "'d2'" in other.message
    assert RAN == ["fetch:d1", "extract:d1"]
    assert ex.policy_state["fetch_before_extract"] == {
        "invoked_tools": ["page_fetch", "sentence_extract"],
        "invoked_keys": [["page_fetch", "d1"]],
    }


def test_a_failed_fetch_does_not_unlock_extraction() -> None:
    ex = Executor(
        ToolRegistry([PAGE_FETCH, EXTRACT]), clock=FixedClock(),
        policies=[FetchBeforeExtractPolicy()],
    )
    assert ex.call("page_fetch", {"doc_id": "missing"}).code == "NOT_FOUND"
    assert ex.call("sentence_extract", {"doc_id": "missing"}).code == "POLICY_DENIED"


def test_fetch_key_may_come_from_the_fetch_result() -> None:
    fetch = Tool(
        name="page_fetch", description="Fetch by URL.", params=UrlParams, result=Page,
        handler=url_fetch,
    )
    ex = Executor(
        ToolRegistry([fetch, EXTRACT]), clock=FixedClock(), policies=[FetchBeforeExtractPolicy()],
    )
    assert ex.call("page_fetch", {"url": "u"}).ok
    assert ex.call("sentence_extract", {"doc_id": "doc-from-u"}).ok


def test_policy_state_is_passed_in_and_read_back_out_as_json() -> None:
    # A session that already fetched d1 (state from the session's policy slice) may extract.
    saved = {"fetch_before_extract": {"invoked_tools": ["page_fetch"],
                                      "invoked_keys": [["page_fetch", "d1"]]}}
    ex = Executor(
        ToolRegistry([PAGE_FETCH, EXTRACT]), clock=FixedClock(),
        policies=[FetchBeforeExtractPolicy()], policy_state=saved,
    )
    assert ex.call("sentence_extract", {"doc_id": "d1"}).ok
    assert saved["fetch_before_extract"]["invoked_tools"] == ["page_fetch"]  # input untouched
    assert orjson.loads(orjson.dumps(ex.policy_state)) == ex.policy_state
    fresh = Executor(
        ToolRegistry([PAGE_FETCH, EXTRACT]), clock=FixedClock(),
        policies=[FetchBeforeExtractPolicy()],
    )
    assert fresh.call("sentence_extract", {"doc_id": "d1"}).code == "POLICY_DENIED"


class Veto:
    name = "veto"

    def check(self, tool: Tool[Any, Any], params: BaseModel, *, state: Any) -> PolicyDecision:
        return PolicyDecision.deny("vetoed") if tool.name == "build" else PolicyDecision.allow()

    def on_result(self, tool: Tool[Any, Any], params: BaseModel, value: BaseModel, *,
                  state: Any) -> dict[str, Any]:
        return dict(state)


class Broken(Veto):
    name = "broken"

    def check(self, tool: Tool[Any, Any], params: BaseModel, *, state: Any) -> PolicyDecision:
        raise RuntimeError("policy bug")


def test_all_policies_must_allow() -> None:
    RAN.clear()
    ex = Executor(
        ToolRegistry([simple("lint"), simple("build")]), clock=FixedClock(),
        policies=[SequentialDependencyPolicy(), Veto()],
    )
    assert ex.call("lint", {}).ok
    vetoed = ex.call("build", {})
    assert (vetoed.code, vetoed.message) == ("POLICY_DENIED", "vetoed")
    assert RAN == ["lint"]


def test_a_policy_that_raises_denies_fail_closed() -> None:
    RAN.clear()
    ex = Executor(ToolRegistry([simple("lint")]), clock=FixedClock(), policies=[Broken()])
    call = ex.call("lint", {})
    assert call.code == "POLICY_DENIED" and "policy bug" in call.message
    assert RAN == []
