"""The executor's gather: calls at the same time, recorded in plan order.

The tools here sleep a random few milliseconds and count how many of them are running,
so the tests see both that calls overlapped and that what is recorded never depends on
the order they finished in.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.context import FixedClock, SystemClock
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.gather import ANSWERS_RESOURCE, CallRequest
from claimfsm.skills.tools.limits import RateLimit, ToolLimits
from claimfsm.skills.tools.policies import FetchBeforeExtractPolicy
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.answers import MemoryAnswers


class Q(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: str


class A(BaseModel):
    q: str
    n: int


class Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    doc_id: str


class Gauge:
    """Calls in flight now, the most ever, and the order calls finished in."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.finished: list[str] = []

    def __enter__(self) -> Gauge:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        return self

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def slow_tool(name: str, gauge: Gauge, *, block: threading.Event | None = None,
              max_ms: int = 15) -> Tool[Any, Any]:
    def handler(params: Q, *, context: ToolContext) -> ToolResult[A]:
        with gauge:
            if block is not None and params.q.startswith("hang"):
                block.wait(60)
            time.sleep(random.uniform(0, max_ms) / 1000)
        with gauge.lock:
            gauge.finished.append(params.q)
        return ToolResult.ok(A(q=params.q, n=len(params.q)))

    return Tool(name=name, description=name, params=Q, result=A, handler=handler)


def requests(n: int, tool: str = "s") -> list[CallRequest]:
    return [CallRequest(tool, {"q": f"query {i}"}, f"t{i}", f"c{i % 3}") for i in range(1, n + 1)]


def record(ex: Executor) -> bytes:
    return orjson.dumps({"calls": [c.model_dump(mode="json") for c in ex.calls],
                         "events": ex.events, "runtime": ex.runtime_state()})


def test_fifty_runs_in_random_completion_order_record_the_same_bytes() -> None:
    seen: set[bytes] = set()
    orders: set[tuple[str, ...]] = set()
    most = 0
    for _ in range(50):
        gauge = Gauge()
        ex = Executor(ToolRegistry([slow_tool("s", gauge)]), max_concurrent=8,
                      clock=FixedClock(tick=timedelta(milliseconds=3)),
                      limits=ToolLimits(rate={"s": RateLimit(100, 1.0)}))
        got = ex.gather(requests(12))
        assert [c.id for c in got if c is not None] == [f"t{i}" for i in range(1, 13)]
        assert all(c is not None and c.ok for c in got)
        seen.add(record(ex))
        orders.add(tuple(gauge.finished))
        most = max(most, gauge.most)
    assert len(seen) == 1  # byte-identical calls, events, buckets
    assert len(orders) > 1 and most > 1  # though calls overlapped, finishing in other orders
    one = orjson.loads(seen.pop())
    assert [e["duration_ms"] for e in one["events"]][:2] == [36, 36]  # reads in plan order


def test_a_gather_of_one_at_a_time_runs_one_call_at_a_time() -> None:
    def run() -> bytes:
        gauge = Gauge()
        ex = Executor(ToolRegistry([slow_tool("s", gauge)]), max_concurrent=1,
                      clock=FixedClock(tick=timedelta(milliseconds=1)))
        ex.gather(requests(5))
        assert gauge.most == 1 and len(gauge.finished) == 5
        return record(ex)

    assert run() == run()


def test_with_a_restorable_resource_calls_run_as_single_calls_do() -> None:
    class Counter:
        def snapshot(self) -> int:
            return 0

        def restore(self, snap: int) -> None:
            return None

    def run(gathered: bool) -> bytes:
        gauge = Gauge()
        ex = Executor(ToolRegistry([slow_tool("s", gauge)]), max_concurrent=8,
                      clock=FixedClock(tick=timedelta(milliseconds=1)),
                      resources={"counter": Counter()})
        if gathered:
            ex.gather(requests(5))
        else:
            for req in requests(5):
                ex.call(req.tool, req.args, call_id=req.call_id, key=req.key)
        assert gauge.most == 1
        return record(ex)

    assert run(True) == run(False)


def test_saved_answers_are_taken_instead_of_calling_again() -> None:
    answers = MemoryAnswers()
    first = Gauge()
    ex = Executor(ToolRegistry([slow_tool("s", first)]), max_concurrent=4, clock=FixedClock(),
                  session_id="S", resources={ANSWERS_RESOURCE: answers})
    ex.gather(requests(4), scope="7")
    assert len(first.finished) == 4 and len(answers.load("S", "7")) == 4
    again = Gauge()
    ex2 = Executor(ToolRegistry([slow_tool("s", again)]), max_concurrent=4, clock=FixedClock(),
                   session_id="S", resources={ANSWERS_RESOURCE: answers})
    ex2.gather(requests(4), scope="7")
    assert again.finished == [] and record(ex2) == record(ex)  # nothing asked twice
    ex3 = Executor(ToolRegistry([slow_tool("s", again)]), max_concurrent=4, clock=FixedClock(),
                   session_id="S", resources={ANSWERS_RESOURCE: answers})
    ex3.gather(requests(4), scope="8")  # the next step: the last one's answers are dropped
    assert len(again.finished) == 4 and set(answers.load("S", "8")) and not answers.load("S", "7")


def test_the_concurrency_limit_and_a_tools_slots_bound_the_calls_in_flight() -> None:
    gauge, other = Gauge(), Gauge()
    tools = [slow_tool("s", gauge, max_ms=30), slow_tool("o", other, max_ms=30)]
    ex = Executor(ToolRegistry(tools),
                  clock=FixedClock(), max_concurrent=4, limits=ToolLimits(concurrency={"o": 2}))
    reqs = [*requests(8), *requests(8, "o")]
    reqs = [r._replace(call_id=f"{r.tool}{i}") for i, r in enumerate(reqs)]
    got = ex.gather(reqs)
    assert all(c is not None and c.ok for c in got)  # none refused CONCURRENCY_LIMITED
    assert gauge.most <= 4 and other.most <= 2 and gauge.most + other.most >= 3


def test_a_rate_limit_ends_the_gather_and_the_later_calls_are_not_made() -> None:
    gauge = Gauge()
    ex = Executor(ToolRegistry([slow_tool("s", gauge)]), clock=FixedClock(), max_concurrent=8,
                  limits=ToolLimits(rate={"s": RateLimit(3, 60.0)}))
    got = ex.gather(requests(6))
    assert [c.code if c else None for c in got] == [None, None, None, "RATE_LIMITED", None, None]
    assert [c.id for c in ex.calls] == ["t1", "t2", "t3", "t4"]
    assert len(gauge.finished) == 3


def test_a_policy_that_waits_for_an_earlier_call_gets_its_own_wave() -> None:
    gauge = Gauge()

    def fetch(params: Doc, *, context: ToolContext) -> ToolResult[Doc]:
        with gauge:
            time.sleep(0.02)  # finishes after the extract would have, were they gathered
        return ToolResult.ok(params)

    def extract(params: Doc, *, context: ToolContext) -> ToolResult[Doc]:
        return ToolResult.ok(params)

    tools = [Tool(name="page_fetch", description="f", params=Doc, result=Doc, handler=fetch),
             Tool(name="sentence_extract", description="e", params=Doc, result=Doc,
                  handler=extract)]
    ex = Executor(ToolRegistry(tools), clock=FixedClock(), max_concurrent=8,
                  policies=[FetchBeforeExtractPolicy()])
    got = ex.gather([CallRequest("page_fetch", {"doc_id": "d1"}, "t1"),
                     CallRequest("sentence_extract", {"doc_id": "d1"}, "t2"),
                     CallRequest("sentence_extract", {"doc_id": "d9"}, "t3")])
    assert [c.code if c else "-" for c in got] == [None, None, "POLICY_DENIED"]


def test_the_deadline_cancels_the_calls_still_running_and_those_not_started() -> None:
    gauge, block = Gauge(), threading.Event()
    clock = SystemClock()
    deadline = clock.now() + timedelta(seconds=1.5)
    ex = Executor(ToolRegistry([slow_tool("s", gauge, block=block)]), clock=clock,
                  max_concurrent=2, deadline=deadline)
    reqs = [CallRequest("s", {"q": q}, f"t{i}") for i, q in
            enumerate(["hang 1", "quick 2", "quick 3", "hang 4", "quick 5"], 1)]
    try:
        got = ex.gather(reqs)
    finally:
        block.set()  # let the abandoned handlers end
    codes = [c.code if c else "-" for c in got]
    # t1 and t4 hang past the deadline; t5 waits for a slot t4 and t1 never give back.
    assert codes == ["DEADLINE_EXCEEDED", None, None, "DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED"]
    assert all("cancelled" in c.message for c in got if c is not None and not c.ok)
    assert [c.id for c in ex.calls] == ["t1", "t2", "t3", "t4", "t5"]


def test_a_deadline_already_passed_refuses_every_call_at_admission() -> None:
    gauge = Gauge()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ex = Executor(ToolRegistry([slow_tool("s", gauge)]), clock=FixedClock(current=now),
                  max_concurrent=4, deadline=now)
    got = ex.gather(requests(3))
    assert {c.code for c in got if c} == {"DEADLINE_EXCEEDED"} and gauge.most == 0
    assert all("has passed" in c.message for c in got if c)


@pytest.mark.parametrize("limit", [1, 4])
def test_a_failing_handler_is_a_failed_call_in_its_place(limit: int) -> None:
    def boom(params: Q, *, context: ToolContext) -> ToolResult[A]:
        if params.q == "query 2":
            raise RuntimeError("backend fell over")
        return ToolResult.ok(A(q=params.q, n=1))

    ex = Executor(ToolRegistry([Tool(name="s", description="s", params=Q, result=A,
                                     handler=boom)]), clock=FixedClock(), max_concurrent=limit)
    got = ex.gather(requests(3))
    assert [c.code if c else "-" for c in got] == [None, "TOOL_ERROR", None]
    assert "backend fell over" in got[1].message  # type: ignore[union-attr]
