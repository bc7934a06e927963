"""The model benchmark runs what it says: a recorded model-backed pipeline whose every
step made one model call, replayed strict; structured calls answered in-process. Its
figures are measurements (docs/models.md), never asserted here."""

from __future__ import annotations

from pathlib import Path

import orjson

from claimfsm.bench import model
from claimfsm.replay import read_record, replay_record


def test_the_recorded_pipeline_is_model_backed_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    wf = model.record_pipeline(path, states=5)
    record = read_record(path)
    calls = [c for _, step in record.walk() for c in getattr(step, "calls", [])]
    assert [c.tool for c in calls] == ["model.chat"] * 5 and all(c.ok for c in calls)
    report = replay_record(record, "strict", machine=wf.definition, bindings=wf.bindings)
    assert report.ok and report.steps == 5


def test_the_figures_are_measured(tmp_path: Path) -> None:
    over, answer = model.overhead_us(calls=5)
    assert over > 0 and answer > 0
    assert model.replay_steps_per_s(repeats=1) > 0
    out = tmp_path / "b.json"
    # --rounds 1 writes every figure and whether each goal was met
    assert model.main(["--rounds", "1", "--json", str(out)]) == 0
    figures = orjson.loads(out.read_bytes())
    assert set(figures["goals_met"]) == set(model.GOALS)
