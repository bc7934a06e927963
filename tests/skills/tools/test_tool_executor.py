"""The executor's dispatch pipeline: every failure is a ToolCall, state is restored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ConfigDict, Field

from claimfsm.skills.context import FixedClock, SeqIds, ToolCaller
from claimfsm.skills.tools.core import (
    BudgetTracker,
    ParameterError,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolResult,
)
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.limits import RateLimit, ToolLimits
from claimfsm.skills.tools.policies import SequentialDependencyPolicy
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.testing import ListResource

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class SearchParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str = Field(min_length=1)
    lim: int = Field(default=4, ge=1, le=20)
    src: str = "wiki"


class WebParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str
    lim: int = 4


class Hits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hits: list[str]
    via: str


def search(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
    return ToolResult.ok(Hits(hits=[f"{params.src}:{params.q}"] * min(params.lim, 2), via="search"))


def web_search(params: WebParams, *, context: ToolContext) -> ToolResult[Hits]:
    return ToolResult.ok(Hits(hits=[f"web:{params.q}"], via="web_search"))


def tool(name: str, handler: Any, params: type[BaseModel] = SearchParams) -> Tool[Any, Any]:
    return Tool(name=name, description=f"The {name} tool.", params=params, result=Hits,
                handler=handler)


SEARCH = tool("search", search)
WEB = tool("web_search", web_search, WebParams)


def test_executor_is_a_tool_caller() -> None:
    assert isinstance(Executor(ToolRegistry([SEARCH]), clock=FixedClock()), ToolCaller)


def test_successful_call_returns_the_json_value() -> None:
    ex = Executor(ToolRegistry([SEARCH]), clock=FixedClock())
    call = ex.call("search", {"q": "moon", "lim": 1}, key="s1")
    assert call.ok and call.code is None and call.message == ""
    assert call.value == {"hits": ["wiki:moon"], "via": "search"}
    assert (call.id, call.tool, call.args, call.attempt, call.key) == (
        "t1", "search", {"q": "moon", "lim": 1}, 1, "s1",
    )
    assert ex.calls == [call]


def test_unknown_tool() -> None:
    ex = Executor(ToolRegistry([SEARCH]), clock=FixedClock())
    call = ex.call("serach", {"q": "x"})
    assert (call.ok, call.code) == (False, "UNKNOWN_TOOL")
    assert "'serach'" in call.message and "search" in call.message


def test_extra_argument_is_refused_naming_the_field() -> None:
    ran: list[str] = []

    def handler(params: WebParams, *, context: ToolContext) -> ToolResult[Hits]:
        ran.append(params.q)
        return ToolResult.ok(Hits(hits=[], via="x"))

    ex = Executor(ToolRegistry([tool("web_search", handler, WebParams)]), clock=FixedClock())
    call = ex.call("web_search", {"q": "x", "src": "wiki"})
    assert (call.ok, call.code) == (False, "BAD_ARGS")
    assert call.message.startswith("src:")
    bad_type = ex.call("web_search", {"q": "x", "lim": "many"})
    assert bad_type.code == "BAD_ARGS" and bad_type.message.startswith("lim:")
    assert ran == []


def test_non_json_args_are_refused() -> None:
    ex = Executor(ToolRegistry([SEARCH]), clock=FixedClock())
    call = ex.call("search", {"q": object()})
    assert (call.ok, call.code, call.args) == (False, "BAD_ARGS", {})


def test_policy_denial_never_runs_the_handler() -> None:
    ran: list[str] = []

    def handler(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        ran.append("ran")
        return search(params, context=context)

    policy = SequentialDependencyPolicy(dependencies={"search": frozenset({"plan"})})
    ex = Executor(ToolRegistry([tool("search", handler)]), clock=FixedClock(), policies=[policy])
    call = ex.call("search", {"q": "x"})
    assert call.code == "POLICY_DENIED"
    assert call.message == "search: requires plan to have succeeded first"
    assert ran == []


def test_raising_handler_restores_resources_and_policy_state() -> None:
    counter = ListResource()
    counter.items.append("kept")

    def flaky(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        context.resources["counter"].items.append(params.q)
        context.session["policy"]["sequential_dependency"]["invoked_tools"].append("forged")
        if params.q == "boom":
            raise RuntimeError("handler exploded")
        return ToolResult.ok(Hits(hits=[params.q], via="flaky"))

    ex = Executor(
        ToolRegistry([tool("search", flaky)]), clock=FixedClock(),
        policies=[SequentialDependencyPolicy()], resources={"counter": counter},
        policy_state={"sequential_dependency": {"invoked_tools": ["plan"], "invoked_keys": []}},
    )
    failed = ex.call("search", {"q": "boom"})
    assert (failed.ok, failed.code) == (False, "TOOL_ERROR")
    assert failed.message == "search: RuntimeError: handler exploded"
    assert counter.items == ["kept"]  # restored from the snapshot
    assert ex.policy_state["sequential_dependency"]["invoked_tools"] == ["plan"]
    assert ex.call("search", {"q": "fine"}).ok
    assert counter.items == ["kept", "fine"]  # success keeps the handler's changes
    assert ex.policy_state["sequential_dependency"]["invoked_tools"] == ["plan", "search"]


def test_error_result_also_restores_resources() -> None:
    counter = ListResource()

    def refuses(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        context.resources["counter"].items.append("partial")
        return ToolResult.error("no hits for x", code="NO_HITS")

    ex = Executor(ToolRegistry([tool("search", refuses)]), clock=FixedClock(),
                  resources={"counter": counter})
    call = ex.call("search", {"q": "x"})
    assert (call.code, call.message, call.value) == ("NO_HITS", "no hits for x", None)
    assert counter.items == []


class Recorder:
    name = "recorder"

    def check(self, tool: Any, params: Any, *, state: Any) -> Any:
        return SequentialDependencyPolicy().check(tool, params, state=state)

    def on_result(self, tool: Any, params: Any, value: Any, *, state: Any) -> dict[str, Any]:
        return {"invoked_tools": ["recorded"], "invoked_keys": []}


class Exploding(Recorder):
    name = "exploding"

    def on_result(self, tool: Any, params: Any, value: Any, *, state: Any) -> dict[str, Any]:
        raise ValueError("on_result bug")


def test_policy_update_is_all_or_nothing() -> None:
    counter = ListResource()

    def adds(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        context.resources["counter"].items.append("x")
        return search(params, context=context)

    ex = Executor(ToolRegistry([tool("search", adds)]), clock=FixedClock(),
                  policies=[Recorder(), Exploding()], resources={"counter": counter})
    call = ex.call("search", {"q": "x"})
    assert call.code == "TOOL_ERROR" and "on_result bug" in call.message
    assert ex.policy_state == {}  # the first policy's update was not kept
    assert counter.items == []


def test_type_error_is_wrapped_with_a_descriptive_message() -> None:
    def broken(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        return ToolResult.ok(Hits(hits=params.q + 1, via="x"))  # type: ignore[operator]

    ex = Executor(ToolRegistry([tool("search", broken)]), clock=FixedClock())
    call = ex.call("search", {"q": "x"})
    assert (call.ok, call.code) == (False, "TOOL_TYPE_ERROR")
    assert call.message.startswith("search: TypeError:") and "str" in call.message


@pytest.mark.parametrize(
    ("returned", "needle"),
    [
        (ToolResult.ok(WebParams(q="x")), "expected Hits"),
        ({"hits": "nope", "via": "x"}, "hits"),
        ("not a result", "expected ToolResult"),
    ],
)
def test_wrong_result_shape_is_a_type_failure(returned: Any, needle: str) -> None:
    def handler(params: SearchParams, *, context: ToolContext) -> Any:
        return ToolResult.ok(returned) if isinstance(returned, dict) else returned

    ex = Executor(ToolRegistry([tool("search", handler)]), clock=FixedClock())
    call = ex.call("search", {"q": "x"})
    assert (call.ok, call.code) == (False, "TOOL_TYPE_ERROR")
    assert needle in call.message


def test_dict_value_is_validated_into_the_result_model() -> None:
    def handler(params: SearchParams, *, context: ToolContext) -> Any:
        return ToolResult.ok({"hits": ["a"], "via": "dict"})

    call = Executor(ToolRegistry([tool("search", handler)]), clock=FixedClock()).call(
        "search", {"q": "x"})
    assert call.ok and call.value == {"hits": ["a"], "via": "dict"}


def test_tool_errors_raised_by_a_handler_keep_their_code() -> None:
    def handler(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        raise ParameterError("lim", "too many for this source")

    call = Executor(ToolRegistry([tool("search", handler)]), clock=FixedClock()).call(
        "search", {"q": "x"})
    assert (call.code, call.message) == ("BAD_ARGS", "lim: too many for this source")


def test_deadline_is_checked_before_the_call() -> None:
    clock = FixedClock(current=T0)
    ex = Executor(ToolRegistry([SEARCH]), clock=clock, deadline=T0 + timedelta(seconds=5))
    assert ex.call("search", {"q": "x"}).ok
    clock.advance(timedelta(seconds=5))
    late = ex.call("search", {"q": "x"})
    assert (late.ok, late.code) == (False, "DEADLINE_EXCEEDED")
    budget_deadline = Executor(ToolRegistry([SEARCH]), clock=FixedClock(current=T0),
                               budget=BudgetTracker(deadline=T0))
    assert budget_deadline.call("search", {"q": "x"}).code == "DEADLINE_EXCEEDED"


def test_heartbeat_past_the_deadline_fails_the_call() -> None:
    beats: list[int] = []

    def long_work(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        for _ in range(10):
            context.beat()
            beats.append(len(context.beats))
        return search(params, context=context)

    clock = FixedClock(current=T0, tick=timedelta(seconds=1))
    ex = Executor(ToolRegistry([tool("search", long_work)]), clock=clock,
                  deadline=T0 + timedelta(seconds=3))
    call = ex.call("search", {"q": "x"})
    assert (call.ok, call.code) == (False, "DEADLINE_EXCEEDED")
    assert beats == [1, 2]  # start read T0; beats at T0+1s, T0+2s; T0+3s is the deadline
    assert "deadline" in call.message


def test_fallback_on_rate_limit_records_two_attempts() -> None:
    limits = ToolLimits(rate={"search": RateLimit(capacity=1, per_seconds=60)})
    ex = Executor(ToolRegistry([SEARCH, WEB]), clock=FixedClock(), limits=limits,
                  fallbacks={"search": "web_search"})
    first = ex.call("search", {"q": "moon", "lim": 3, "src": "wiki"}, call_id="t1")
    assert first.tool == "search" and first.attempt == 1 and first.ok
    second = ex.call("search", {"q": "mars", "lim": 3, "src": "wiki"}, call_id="t2", key="s2")
    assert (second.tool, second.attempt, second.ok, second.id, second.key) == (
        "web_search", 2, True, "t2", "s2")
    assert second.args == {"q": "mars", "lim": 3}  # src dropped: web_search refuses it
    assert second.value == {"hits": ["web:mars"], "via": "web_search"}
    assert [(c.tool, c.attempt, c.code) for c in ex.calls] == [
        ("search", 1, None), ("search", 1, "RATE_LIMITED"), ("web_search", 2, None)]
    assert [(e["tool"], e["attempt"], e["ok"]) for e in ex.events] == [
        ("search", 1, True), ("search", 1, False), ("web_search", 2, True)]


def test_no_fallback_for_other_failures_or_without_configuration() -> None:
    ex = Executor(ToolRegistry([SEARCH, WEB]), clock=FixedClock(),
                  fallbacks={"search": "web_search"})
    assert ex.call("search", {"q": ""}).code == "BAD_ARGS"
    assert [c.tool for c in ex.calls] == ["search"]
    with pytest.raises(ToolDefinitionError, match="fallback"):
        Executor(ToolRegistry([SEARCH]), clock=FixedClock(), fallbacks={"search": "web_search"})


def test_telemetry_event_fields_and_clock_durations() -> None:
    clock = FixedClock(current=T0, tick=timedelta(milliseconds=250))
    ex = Executor(ToolRegistry([SEARCH]), clock=clock, ids=SeqIds())
    ex.call("search", {"q": "x"})
    ex.call("nope", {})
    assert ex.events == [
        {"type": "ToolInvoked", "tool": "search", "args": {"q": "x"}, "ok": True,
         "code": None, "duration_ms": 250, "attempt": 1, "id": "t1"},
        {"type": "ToolInvoked", "tool": "nope", "args": {}, "ok": False,
         "code": "UNKNOWN_TOOL", "duration_ms": 250, "attempt": 1, "id": "t2"},
    ]


def run_session() -> tuple[bytes, bytes, bytes]:
    clock = FixedClock(current=T0, tick=timedelta(milliseconds=7))
    ex = Executor(
        ToolRegistry([SEARCH, WEB]), clock=clock, ids=SeqIds(), session_id="A1",
        limits=ToolLimits(rate={"search": RateLimit(capacity=2, per_seconds=1)}),
        fallbacks={"search": "web_search"}, policies=[SequentialDependencyPolicy()],
    )
    for q in ("moon", "mars", "venus", "", "pluto"):
        ex.call("search", {"q": q, "lim": 2})
    calls = orjson.dumps([c.model_dump() for c in ex.calls])
    return orjson.dumps(ex.events), calls, orjson.dumps(ex.runtime_state())


def test_events_are_deterministic_under_a_fixed_clock() -> None:
    first, second = run_session(), run_session()
    assert first == second
    events = orjson.loads(first[0])
    assert [e["id"] for e in events] == ["t1", "t2", "t3", "t3", "t4", "t5", "t5"]
    assert {e["duration_ms"] for e in events} == {7}


def test_default_ids_count_without_an_id_source() -> None:
    ex = Executor(ToolRegistry([SEARCH]), clock=FixedClock())
    assert [ex.call("search", {"q": "x"}).id for _ in range(3)] == ["t1", "t2", "t3"]
    assert ex.call("search", {"q": "x"}, call_id="mine").id == "mine"


def test_context_gives_the_handler_session_and_resources() -> None:
    seen: dict[str, Any] = {}

    def peek(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        seen.update(sid=context.session["sid"], res=context.resource("corpus"),
                    deadline=context.deadline)
        with pytest.raises(TypeError):
            context.session["sid"] = "other"  # type: ignore[index]
        return search(params, context=context)

    ex = Executor(ToolRegistry([tool("search", peek)]), clock=FixedClock(), session_id="A1",
                  resources={"corpus": "C"}, deadline=T0 + timedelta(days=1))
    assert ex.call("search", {"q": "x"}).ok
    assert seen == {"sid": "A1", "res": "C", "deadline": T0 + timedelta(days=1)}
    missing = Executor(ToolRegistry([tool("search", peek)]), clock=FixedClock()).call(
        "search", {"q": "x"})
    assert missing.code == "MISSING_RESOURCE"
    assert missing.message == "resource 'corpus' is not available"


def test_a_result_over_the_size_limit_is_refused() -> None:
    from claimfsm.skills.limits import MAX_TOOL_RESULT_BYTES

    def huge(params: SearchParams, *, context: ToolContext) -> ToolResult[Hits]:
        return ToolResult.ok(Hits(hits=["x" * 1024] * (MAX_TOOL_RESULT_BYTES // 1024 + 1),
                                  via="huge"))

    ex = Executor(ToolRegistry([tool("search", huge)]), clock=FixedClock())
    call = ex.call("search", {"q": "moon"}, key="s1")
    assert not call.ok and call.code == "INPUT_TOO_LARGE"
    assert str(MAX_TOOL_RESULT_BYTES) in call.message
