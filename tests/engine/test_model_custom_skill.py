"""A model-backed skill of one's own in a few lines, through the front door: it runs on a
custom machine, every model call is recorded, and the session replays with no server."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from claimfsm import (
    Envelope,
    MemoryInput,
    MemoryStore,
    ModelFailure,
    ModelUse,
    SkillContext,
    ask_model,
    define_machine,
    model_tools,
    replay_record,
    skill,
)
from claimfsm.replay import read_record
from claimfsm.replay.write import Recorder
from claimfsm.testing.model_server import ScriptedModelServer


class Topic(BaseModel):
    topic: str
    risky: bool


@skill()
def classify(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    got = ask_model(ctx, ModelUse(**inp.config["model"]),
                    [{"role": "user", "content": f"Classify: {inp.claim}"}], Topic)
    if isinstance(got, ModelFailure):
        return inp.error(got.code, got.msg, rb="state")
    return inp.ok("DONE", **got.model_dump())


WORKFLOW = define_machine("topics", states={"CLASSIFY": classify, "DONE": None,
                                            "FAILED": None},
                          transitions=[("CLASSIFY", "DONE"), ("CLASSIFY", "FAILED")],
                          failure="FAILED")


def test_a_custom_model_skill_runs_records_and_replays_offline(tmp_path: Path) -> None:
    path = tmp_path / "topic.jsonl"
    with ScriptedModelServer(lambda req: {"topic": "food", "risky": False}) as server:
        driver = WORKFLOW.driver(MemoryStore(), tools=model_tools())
        with Recorder(path, machine="topics", finals=WORKFLOW.definition.finals) as rec:
            driver.on_step = rec
            first = driver.start("Honey never spoils.",
                                 config={"model": {"url": server.url, "model": "m"}})
            rec.header(first, {"documents": 0, "facts": 0, "limits": {}, "fallbacks": {}})
            head = driver.run(first.sid)
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert head.fsm == "DONE" and head.state.memory["topic"] == "food"
    assert set(schema["properties"]) == {"topic", "risky"}
    report = replay_record(read_record(path), "strict", machine=WORKFLOW.definition,
                           bindings=WORKFLOW.bindings)  # the server is gone
    assert report.ok, report.divergence


def test_a_custom_model_skill_s_failure_is_a_code(tmp_path: Path) -> None:
    with ScriptedModelServer(lambda req: {"topic": 3}) as server:
        driver = WORKFLOW.driver(MemoryStore(), tools=model_tools())
        first = driver.start("x", config={"model": {"url": server.url, "model": "m"}})
        head = driver.run(first.sid)
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == "MODEL_BAD_OUTPUT"
