"""Model-backed sessions replay: strict and tools mode answer model.chat from the record
with no network; live mode asks the model again and reports where it first answers
differently. The shipped model-backed fixtures replay in `make test` with no server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.replay import read_record, replay_record
from claimfsm.replay.write import Recorder, engine_tools
from claimfsm.skills.tools import model_http
from claimfsm.testing.model_server import ScriptedModelServer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    def refuse(url: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(url)
        raise AssertionError(f"a replay asked the network: {url}")

    monkeypatch.setattr(model_http, "post_json", refuse)
    from claimfsm.skills.tools import model_chat

    monkeypatch.setattr(model_chat, "post_json", refuse)
    return asked


@pytest.mark.parametrize("name", ["model_backed", "model_fallback"])
@pytest.mark.parametrize("mode", ["strict", "tools"])
def test_the_model_fixtures_replay_with_no_server(name: str, mode: str, no_network) -> None:
    record = read_record(FIXTURES / f"{name}.jsonl")
    report = replay_record(record, mode)  # type: ignore[arg-type]
    assert report.ok, report.divergence
    assert report.actual.fsm == "DONE" and no_network == []
    calls = [c for _, step in record.walk() for c in getattr(step, "calls", [])
             if c.tool == "model.chat"]
    assert calls and all(c.value and c.value["request"].startswith("sha256:") for c in calls)


def test_the_fallback_fixture_says_it_fell_back() -> None:
    record = read_record(FIXTURES / "model_fallback.jsonl")
    plan = next(step for _, step in record.walk() if getattr(step, "skill", "") == "parse_claim")
    assert plan.envelope["d"]["model"]["via"] == "fallback"
    assert plan.envelope["d"]["model"]["code"] == "MODEL_BAD_OUTPUT"


@pytest.fixture
def judge_says() -> list[str]:
    return ["SUPPORTS"]


@pytest.fixture
def server(judge_says: list[str]) -> Iterator[ScriptedModelServer]:
    import orjson

    def answer(req: dict[str, Any]) -> Any:
        asked = orjson.loads(req["messages"][1]["content"])["subclaims"]
        return {"judgments": [{"id": c["id"], "verdict": judge_says[0], "confidence": 0.5,
                               "cites": [c["evidence"][0]["id"]]} for c in asked]}

    with ScriptedModelServer(answer) as srv:
        yield srv


def _record(server: ScriptedModelServer, path: Path) -> None:
    profile = Profile(judge="model", model_url=server.url, model="m", on_model_error="fail")
    with Engine.open(None, config=EngineConfig(profile=profile)) as eng, Recorder(path) as rec:
        eng.driver.on_step = rec
        first = eng.start("NASA landed on the Moon in 1969.")
        rec.header(first, engine_tools(eng))
        assert eng.driver.run(first.sid).fsm == "DONE"


def test_live_mode_asks_again_and_names_the_first_divergence(
    server: ScriptedModelServer, judge_says: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "judged.jsonl"
    _record(server, path)
    assert replay_record(read_record(path), "live").ok  # the same answers: no divergence
    asked = len(server.requests)
    judge_says[0] = "REFUTES"
    report = replay_record(read_record(path), "live")
    assert len(server.requests) > asked  # live: the model was asked again
    d = report.divergence
    assert d is not None and d.state == "VERIFY" and d.kind == "ENVELOPE_MISMATCH"
    assert d.path == "d.judgments[0].verdict"
    assert (d.expected, d.actual) == ("SUPPORTS", "REFUTES")
    # strict replay of the same record still answers from it, unchanged
    assert replay_record(read_record(path), "strict").ok
