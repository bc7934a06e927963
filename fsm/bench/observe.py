"""What watching a step costs: the same steps with no observer (the default), with counts
for ``/metrics``, with OpenTelemetry spans (the SDK's in-memory exporter, so the figure
is the engine's side, not a network's) and with everything plus JSON logs.

Two measurements, each in interleaved rounds (a load spike on a shared machine hits every
case alike), the median over rounds:

- ``hook``: the driver's own step path with the step's work replaced by a stub that makes
  two tool calls' worth of hook calls (the demo averages 1.7 per step), CPU µs per step:
  what the observer adds, and what the ``None`` check costs when it is off;
- ``steps``: the demo claims run to DONE on an in-memory store, wall µs per step.

``claimfsm bench observe`` (``make bench-observe``); never an assertion in a test.
"""

from __future__ import annotations

import io
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

from claimfsm._base.observe import TOOL_HOOK
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.runtime import FIXTURES, Engine
from claimfsm.observe.observer import Observer
from claimfsm.observe.tally import Tally
from claimfsm.state.model import Revision

__all__ = ["CASES", "format_table", "run_bench"]

CASES = ("off", "metrics", "traces", "all")


def _observer(case: str) -> Callable[[], Observer | None]:
    if case == "off":
        return lambda: None
    if case == "metrics":
        return lambda: Observer(tally=Tally())
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from claimfsm.observe.traces import Tracing

    def traced() -> Observer:
        tracing = Tracing(InMemorySpanExporter(), batch=False)
        return Observer(tracing=tracing, tally=Tally() if case == "all" else None)

    return traced


def _round(driver: Driver, engine: Engine, claims: list[str],
           make: Callable[[], Observer | None]) -> tuple[float, int]:
    driver.observer = make()
    steps = 0
    began = time.perf_counter()
    for claim in claims:
        head = driver.run(engine.start(claim).sid)
        steps += head.rev
    seconds = time.perf_counter() - began
    driver.observer = None
    return seconds, steps


_TOOL_EVENT = {"type": "ToolInvoked", "tool": "search", "ok": True, "code": None,
               "duration_ms": 0, "attempt": 1, "id": "t1"}


def _hook_round(engine: Engine, result: StepResult, make: Callable[[], Observer | None],
                n: int) -> float:
    driver = engine.driver
    head = engine.store.head(result.sid)

    def stub(_: Revision, actor: str | None = None) -> StepResult:
        for _call in range(2):  # what the executor does per tool call
            hook = TOOL_HOOK.get()
            if hook is not None:
                hook(_TOOL_EVENT, 0.0001)
        return result

    driver.observer = make()
    driver._fire = stub  # type: ignore[method-assign,assignment]
    step = driver._step
    try:
        began = time.process_time()
        for _ in range(n):
            step(head)
        return (time.process_time() - began) / n * 1e6
    finally:
        del driver._fire
        driver.observer = None


def run_bench(rounds: int = 5, sessions: int = 20,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Median µs per step of each case over ``rounds`` rounds: the hook alone (5,000
    stub steps) and ``sessions`` demo sessions run to DONE."""
    demo = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
    claims = [demo[i % len(demo)] for i in range(sessions)]
    cases: dict[str, Callable[[], Observer | None]] = {}
    missing: dict[str, str] = {}
    for case in CASES:
        try:
            cases[case] = _observer(case)
        except ImportError as exc:
            missing[case] = f"the otel extra is not installed ({exc.name})"
    logs = io.StringIO()
    per_step: dict[str, list[float]] = {case: [] for case in cases}
    hook: dict[str, list[float]] = {case: [] for case in cases}
    engine = Engine.open(None)
    try:
        _round(engine.driver, engine, claims[:2], lambda: None)  # warm: imports, caches
        sample = engine.driver.step(engine.start(claims[0]).sid)
        for r in range(rounds):
            for case, make in cases.items():
                handler = None
                if case == "all":
                    from claimfsm.observe.logs import setup_logging, stop_logging

                    handler = setup_logging("json", logs)
                try:
                    hook[case].append(_hook_round(engine, sample, make, 5_000))
                    seconds, steps = _round(engine.driver, engine, claims, make)
                finally:
                    if handler is not None:
                        stop_logging(handler)
                        logs.seek(0)
                        logs.truncate()
                per_step[case].append(seconds / steps * 1e6)
            if progress is not None:
                progress(f"round {r + 1} of {rounds}")
    finally:
        engine.close()
    return {"rounds": rounds, "sessions": sessions, "hook": _rows(hook, 2),
            "steps": _rows(per_step, 1), "missing": missing,
            "machine": {"python": platform.python_version(), "cpus": _cpus()}}


def _rows(figures: dict[str, list[float]], digits: int) -> dict[str, dict[str, float]]:
    off = statistics.median(figures["off"])
    return {case: {"us_per_step": round(statistics.median(v), digits),
                   "overhead_us": round(statistics.median(v) - off, digits)}
            for case, v in figures.items()}


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def format_table(report: dict[str, Any]) -> str:
    """The figures as a plain table."""
    lines = [f"step cost, median of {report['rounds']} rounds (in-memory store, in-memory "
             "span exporter)",
             f"{'case':<10}{'hook CPU µs/step':>18}{'+µs':>8}"
             f"{'demo wall µs/step':>20}{'+µs':>9}"]
    for case, row in report["hook"].items():
        step = report["steps"][case]
        lines.append(f"{case:<10}{row['us_per_step']:>18}{row['overhead_us']:>8}"
                     f"{step['us_per_step']:>20}{step['overhead_us']:>9}")
    lines.extend(f"{case:<10}left out: {why}" for case, why in report["missing"].items())
    return "\n".join(lines)
