"""Traces: a span per step (a trace of its own) with the step's sid, rev, state, skill,
status, code and rollback kind, a child span per tool call; checked with the SDK's
in-memory exporter, and once over OTLP/HTTP against a receiver process, across Ray
workers linked to the batch's span. Off, the engine imports no OpenTelemetry.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.runtime import FIXTURES, Engine
from claimfsm.state.open import open_store
from tests.support.components import need_module

need_module("opentelemetry.sdk", "otel")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from claimfsm.observe.observer import Observer, ObserveSpec  # noqa: E402
from claimfsm.observe.tally import Tally  # noqa: E402
from claimfsm.observe.traces import Tracing  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def traced_engine(db: Any = None) -> tuple[Engine, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    eng = Engine.open(db)
    eng.driver.observer = Observer(tracing=Tracing(exporter, batch=False))
    return eng, exporter


def tool_events(eng: Engine, sid: str) -> list[dict[str, Any]]:
    return [e for rev in eng.store.history(sid) for e in rev.events if e["type"] == "ToolInvoked"]


def test_every_step_is_a_trace_with_a_child_span_per_tool_call() -> None:
    eng, exporter = traced_engine()
    try:
        head = eng.driver.run(eng.start(DEMO[0]).sid)
        spans = exporter.get_finished_spans()
        steps = [s for s in spans if s.name == "claimfsm.step"]
        tools = [s for s in spans if s.name.startswith("claimfsm.tool ")]
        history = list(eng.store.history(head.sid))
        assert len(steps) == head.rev == len(history) - 1
        assert len({s.context.trace_id for s in steps}) == len(steps)  # one trace each
        assert all(s.parent is None for s in steps)
        for span, before, after in zip(steps, history, history[1:], strict=False):
            attrs = dict(span.attributes or {})
            assert attrs["claimfsm.sid"] == head.sid
            assert attrs["claimfsm.rev"] == before.rev
            assert attrs["claimfsm.state"] == before.fsm
            assert attrs["claimfsm.skill"] == after.skill
            assert attrs["claimfsm.status"] == after.envelope["s"]
            assert attrs["claimfsm.committed_rev"] == after.rev
            assert attrs["claimfsm.rollback"] == after.envelope["rb"]
        events = tool_events(eng, head.sid)
        assert len(tools) == len(events) > 0
        by_id = {s.context.span_id: s for s in steps}
        for span, event in zip(tools, events, strict=True):
            assert span.parent is not None and span.parent.span_id in by_id
            parent = by_id[span.parent.span_id]
            assert span.context.trace_id == parent.context.trace_id
            attrs = dict(span.attributes or {})
            assert attrs["claimfsm.tool"] == event["tool"]
            assert attrs["claimfsm.attempt"] == event["attempt"]
            assert attrs["claimfsm.outcome"] == (event["code"] or "ok")
            assert float(attrs["claimfsm.duration_ms"]) >= 0
            assert span.start_time is not None and span.end_time is not None
            assert parent.start_time is not None and parent.end_time is not None
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
    finally:
        eng.close()


def test_a_failing_step_carries_its_code_and_an_error_status() -> None:
    eng, exporter = traced_engine()
    try:
        sid = eng.start(DEMO[0], config={"max_tool_calls": 1}).sid
        head = eng.driver.run(sid)
        assert head.fsm == "FAILED"
        spans = [s for s in exporter.get_finished_spans() if s.name == "claimfsm.step"]
        failed = [s for s in spans if "claimfsm.code" in (s.attributes or {})]
        assert failed, "no span carries the failing step's code"
        assert dict(failed[-1].attributes or {})["claimfsm.code"] == head.state.error["code"]
        assert failed[-1].status.status_code.name == "ERROR"
    finally:
        eng.close()


def test_an_exporter_that_fails_never_fails_the_step() -> None:
    class Broken(InMemorySpanExporter):
        def export(self, spans: Any) -> Any:
            raise RuntimeError("collector down")

    eng = Engine.open(None)
    eng.driver.observer = Observer(tracing=Tracing(Broken(), batch=False), tally=Tally())
    try:
        head = eng.driver.run(eng.start(DEMO[0]).sid)
        assert head.fsm == "DONE"
    finally:
        eng.close()


def test_tracing_off_imports_no_telemetry_library() -> None:
    code = (
        "import sys\n"
        "from claimfsm.engine.runtime import Engine\n"
        "eng = Engine.open(None)\n"
        "head = eng.driver.run(eng.start('Paris is the capital of France.').sid)\n"
        "assert head.fsm == 'DONE', head.fsm\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('opentelemetry', "
        "'prometheus_client', 'claimfsm.observe')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin"}, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# -- a real receiver -----------------------------------------------------------------


@pytest.fixture()
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    out = tmp_path / "spans.jsonl"
    out.touch()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.otlp_receiver", str(out)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}", out
    finally:
        proc.terminate()
        proc.wait(10)


def received(out: Path, want: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        spans = [json.loads(line) for line in out.read_text().splitlines()]
        if len(spans) >= want or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)


def test_batch_on_ray_sends_step_traces_linked_to_the_batch_span(
    ray_address: str, receiver: tuple[str, Path], tmp_path: Path
) -> None:
    from claimfsm.batch import read_claims, run_batch

    endpoint, out = receiver
    src = tmp_path / "claims.jsonl"
    src.write_text("".join(json.dumps({"id": i, "claim": DEMO[i % len(DEMO)]}) + "\n"
                           for i in range(6)))
    db = tmp_path / "x.db"
    tracing = Tracing.otlp(endpoint)
    tally = Tally()
    claims = read_claims(src)
    try:
        with tracing.batch_span({"claimfsm.claims": 6}) as carrier:
            spec = ObserveSpec(otel=True, endpoint=endpoint, link=tuple(carrier.items()),
                               tally=True)
            summary = run_batch(claims, db, workers=2, observe=spec, tally=tally)
    finally:
        claims.close()
    tracing.shutdown()
    assert summary.runner == "ray" and summary.ok
    with open_store(db) as store:
        history = {sid: list(store.history(sid)) for sid in store.sessions()}
    steps_in_store = sum(len(revs) - 1 for revs in history.values())
    tools_in_store = sum(1 for revs in history.values() for r in revs for e in r.events
                         if e["type"] == "ToolInvoked")
    spans = received(out, steps_in_store + tools_in_store + 1)
    batch = [s for s in spans if s["name"] == "claimfsm.batch"]
    steps = [s for s in spans if s["name"] == "claimfsm.step"]
    tools = [s for s in spans if s["name"].startswith("claimfsm.tool ")]
    assert len(batch) == 1 and batch[0]["service"] == "claimfsm"
    assert len(steps) == steps_in_store and len(tools) == tools_in_store
    assert {s["attributes"]["claimfsm.sid"] for s in steps} == set(history)
    for span in steps:  # its own trace, linked to the batch's span in the driver process
        assert span["trace_id"] != batch[0]["trace_id"] and not span["parent"]
        assert span["links"] == [{"trace_id": batch[0]["trace_id"],
                                  "span_id": batch[0]["span_id"]}]
    step_ids = {s["span_id"]: s["trace_id"] for s in steps}
    assert all(step_ids[t["parent"]] == t["trace_id"] for t in tools)
    # the workers' counts came back with their results
    assert tally.commits == steps_in_store
    assert sum(tally.tool_calls.values()) == tools_in_store
