"""What a model call costs the engine, without the model: ``python -m claimfsm.bench.model``.

- ``overhead_us_per_call``: one structured model call as a skill makes it
  (:func:`claimfsm.skills.model_call.ask`: the schema, the ``model.chat`` tool through
  the executor's whole pipeline, the request body and its digest, the answer parsed,
  validated and checked, the ``ToolInvoked`` event with its blobs), answered in-process
  by a model that takes no time; the answer's own making (``answer_us``) is measured
  apart and taken off. Goal: at most 1,000 µs.
- ``replay_steps_per_s``: strict replay of a recorded model-backed session: a custom
  machine of 20 states, each a model-backed skill making one call, answered from the
  record. Goal: at least 1,000 steps/s. Beside it, for scale, the shipped
  claim-verification records with (``model_backed.jsonl``) and without
  (``supported.jsonl``) a model: their evidence extraction, not the model calls, sets
  their pace.

Medians of ``--rounds`` rounds; a measurement, never an assertion in a test.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.api import MemoryInput, Workflow, define_machine, linear, skill
from claimfsm.engine.runtime import FIXTURES, executor_factory
from claimfsm.replay import read_record, replay_record
from claimfsm.replay.write import Recorder
from claimfsm.skills.context import FixedClock, SkillContext, SystemClock
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_query_plan import Claim
from claimfsm.skills.model_call import ModelFailure, ModelUse, ask
from claimfsm.skills.model_planner import Answer, check_plans
from claimfsm.skills.tools.core import BudgetTracker
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.model_chat import model_tool
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.memory import MemoryStore
from claimfsm.testing.model_server import scripted_post

__all__ = ["GOALS", "measure", "overhead_us", "replay_steps_per_s"]

GOALS = {"overhead_us_per_call": ("<=", 1000.0), "replay_steps_per_s": (">=", 1000.0)}
RECORD = FIXTURES / "sessions" / "model_backed.jsonl"
PLAIN = FIXTURES / "sessions" / "supported.jsonl"  # the same claim, no model
_CLAIMS = [Claim(id="s1", c="NASA landed on the Moon in 1969.")]
_PLAN = {"plans": [{"id": "s1", "q": ["NASA landed on the Moon in 1969"], "src": ["wiki"],
                    "lim": 4}]}


def _answer(request: dict[str, Any]) -> Any:
    return _PLAN


def overhead_us(calls: int = 2000) -> tuple[float, float]:
    """(µs per structured call minus the answer's making, µs of the answer's making)."""
    post = scripted_post(_answer)
    ex = Executor(ToolRegistry([model_tool(post=post)]), clock=SystemClock(),
                  budget=BudgetTracker(max_tokens=10**12))
    use = ModelUse(url="http://127.0.0.1:8080/v1", model="bench")
    messages = [{"role": "system", "content": "plan"},
                {"role": "user", "content": orjson.dumps({"subclaims": [_CLAIMS[0].model_dump()]})
                 .decode()}]
    ctx = SkillContext(tools=ex)
    body = orjson.dumps({"model": "bench", "messages": messages})

    def check(a: BaseModel) -> str | None:
        assert isinstance(a, Answer)
        return check_plans(_CLAIMS, a)

    got = ask(ctx, use, messages, Answer, check=check)  # warm: schema cache, imports
    assert isinstance(got, Answer), got
    start = time.perf_counter()
    for _ in range(calls):
        ex.calls.clear()
        ex.events.clear()
        ask(ctx, use, messages, Answer, check=check)
    total = (time.perf_counter() - start) / calls * 1e6
    start = time.perf_counter()
    for _ in range(calls):
        post("http://127.0.0.1:8080/v1/chat/completions", body, headers={}, timeout=1.0)
    answer = (time.perf_counter() - start) / calls * 1e6
    return total - answer, answer


class _Topic(BaseModel):
    model_config = ConfigDict(defer_build=True)

    topic: str
    risky: bool


def _pipeline(states: int = 20) -> Workflow:
    """A custom machine whose every state is a model-backed skill (one call each)."""

    @skill()
    def ask_topic(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        got = ask(ctx, ModelUse(**inp.config["model"]),
                  [{"role": "user", "content": inp.claim}], _Topic)
        if isinstance(got, ModelFailure):
            return inp.error(got.code, got.msg, rb="state")
        n = int(inp.st.fsm[1:])
        return inp.ok(f"S{n + 1}" if n < states else "DONE", **{f"t{n}": got.topic})

    names = [f"S{i}" for i in range(1, states + 1)]
    return define_machine("model_pipeline", states={**dict.fromkeys(names, ask_topic),
                                                    "DONE": None},
                          transitions=linear(names))


def record_pipeline(path: Path, states: int = 20) -> Workflow:
    """Record one session of :func:`_pipeline` (the model answered in-process) to ``path``."""
    wf = _pipeline(states)
    post = scripted_post(lambda req: {"topic": "food", "risky": False})
    tools = executor_factory(ToolRegistry([model_tool(post=post)]), policies=(), fallbacks={})
    driver = wf.driver(MemoryStore(), tools=tools, clock=FixedClock())
    with Recorder(path, machine=wf.definition.name, finals=wf.definition.finals) as rec:
        driver.on_step = rec
        first = driver.start("Honey never spoils.", config={"model": {
            "url": "http://127.0.0.1:8080/v1", "model": "bench"}})
        rec.header(first, {"documents": 0, "facts": 0, "limits": {}, "fallbacks": {}})
        assert driver.run(first.sid).fsm == "DONE"
    return wf


def replay_steps_per_s(repeats: int = 50, record: Path | None = None) -> float:
    """Steps per second of strict replay: of the recorded model-backed pipeline (every
    step a model call, answered from the record), or of ``record`` (a claim-verification
    record), read once and replayed ``repeats`` times."""
    with tempfile.TemporaryDirectory() as tmp:
        if record is None:
            path = Path(tmp) / "pipeline.jsonl"
            wf = record_pipeline(path)
            kwargs: dict[str, Any] = {"machine": wf.definition, "bindings": wf.bindings}
        else:
            path, kwargs = record, {}
        rec = read_record(path)
        replay_record(rec, "strict", **kwargs)  # warm
        steps = 0
        start = time.perf_counter()
        for _ in range(repeats):
            report = replay_record(rec, "strict", **kwargs)
            assert report.ok, report.divergence
            steps += report.steps
        return steps / (time.perf_counter() - start)


def measure(rounds: int = 5) -> dict[str, Any]:
    """The figures: medians of ``rounds`` rounds, with the machine they ran on."""
    over, answer, replay, claim, plain = [], [], [], [], []
    for _ in range(rounds):
        o, a = overhead_us()
        over.append(o)
        answer.append(a)
        replay.append(replay_steps_per_s())
        claim.append(replay_steps_per_s(10, RECORD))
        plain.append(replay_steps_per_s(10, PLAIN))
    measured: dict[str, float] = {
        "overhead_us_per_call": round(statistics.median(over), 1),
        "answer_us": round(statistics.median(answer), 1),
        "replay_steps_per_s": round(statistics.median(replay)),
        "claim_model_replay_steps_per_s": round(statistics.median(claim)),
        "claim_plain_replay_steps_per_s": round(statistics.median(plain))}
    met = {key: (measured[key] <= goal) if op == "<=" else (measured[key] >= goal)
           for key, (op, goal) in GOALS.items()}
    return {**measured, "rounds": rounds, "python": platform.python_version(),
            "machine": platform.machine(), "goals_met": met}


def main(argv: list[str] | None = None) -> int:
    """``python -m claimfsm.bench.model [--rounds N] [--json FILE]``."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.model")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    figures = measure(max(1, args.rounds))
    for key, value in figures.items():
        print(f"{key:<24} {value}")
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
