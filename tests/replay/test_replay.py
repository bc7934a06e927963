"""Replay: strict, tools and live modes, divergence reports, and the JSON-path diff."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.replay import replay_record
from claimfsm.replay.diff import ABSENT, first_diff
from claimfsm.replay.record import Record, RecordError, parse_record, read_record
from claimfsm.skills.base import Skill
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.testing import noop_session
from tests.replay.sealing import resealed

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


def tamper(name: str, edit: Callable[[list[dict[str, Any]]], None]) -> Record:
    """The record ``name`` with ``edit`` applied and its lines sealed again: a genuine
    record of what the engine no longer does (an unsealed edit is RECORD_TAMPERED)."""
    objs = [orjson.loads(line) for line in (SESSIONS / name).read_bytes().splitlines()]
    edit(objs)
    return parse_record(resealed(objs), source=name)


def step_with(objs: list[dict[str, Any]], tool: str) -> dict[str, Any]:
    return next(o for o in objs if o["t"] == "step" and any(c["tool"] == tool
                                                             for c in o["calls"]))


def test_strict_replay_of_a_recorded_session_is_clean() -> None:
    report = replay_record(read_record(SESSIONS / "refuted.jsonl"))
    assert report.ok and report.divergence is None and not report.verdict_changed
    assert report.expected == report.actual
    assert (report.actual.fsm, report.actual.verdict) == ("DONE", "REFUTES")
    assert report.steps == len(read_record(SESSIONS / "refuted.jsonl").steps)


def test_a_tampered_tool_result_is_an_envelope_mismatch_with_its_path() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        step = step_with(objs, "kb_lookup")
        step["calls"][0]["value"]["facts"][0]["object"] = "Sydney"

    report = replay_record(tamper("refuted.jsonl", edit))
    d = report.divergence
    assert not report.ok and d is not None
    assert (d.kind, d.state, d.skill) == ("ENVELOPE_MISMATCH", "RETRIEVAL", "retrieve")
    assert d.path == "d.results[0].value.facts[0].object"
    assert (d.expected, d.actual) == ("Canberra", "Sydney")
    assert d.line == d.step + 1
    # The replay ran on to the end: with Sydney as the capital, the verdict flips.
    assert report.verdict_changed and report.actual.verdict == "SUPPORTS"
    assert report.expected.verdict == "REFUTES"


def test_a_tampered_envelope_names_the_first_differing_field() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        objs[1]["envelope"]["d"]["plans"][0]["q"][0] = "something else"

    report = replay_record(tamper("supported.jsonl", edit))
    d = report.divergence
    assert d is not None and (d.step, d.line, d.state) == (1, 2, "PARSE_CLAIM")
    assert d.path == "d.plans[0].q[0]" and d.expected == "something else"
    assert d.actual == "NASA Moon landing 1969"
    assert not report.verdict_changed  # the skills still reach the same verdict


def test_a_different_skill_input_is_reported_before_its_envelope() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        objs[2]["input"]["batch"] = 4

    d = replay_record(tamper("supported.jsonl", edit)).divergence
    assert d is not None and (d.kind, d.step, d.path) == ("INPUT_MISMATCH", 2, "input.batch")
    assert (d.expected, d.actual) == (4, 1)


def test_a_call_the_record_does_not_hold_is_unrecorded_never_live() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        step_with(objs, "kb_lookup")["calls"][0]["args"]["q"] = "other words"

    report = replay_record(tamper("refuted.jsonl", edit))
    d = report.divergence
    assert d is not None and d.kind == "UNRECORDED_TOOL_CALL" and d.path == "calls[0]"
    assert d.expected == {"tool": "kb_lookup",
                          "args": {"q": "other words", "lim": 3, "src": "kb"}}
    assert d.actual == {"tool": "kb_lookup",
                        "args": {"q": "Sydney Australia capital", "lim": 3, "src": "kb"}}


def test_a_recorded_call_the_replay_never_makes_is_missing() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        step = step_with(objs, "kb_lookup")
        step["calls"].append({**step["calls"][0], "id": "t99"})

    d = replay_record(tamper("refuted.jsonl", edit)).divergence
    assert d is not None and d.kind == "MISSING_TOOL_CALL" and d.path == "calls[1]"


def test_a_record_with_steps_beyond_the_end_reports_session_ended() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        end = objs.pop()
        last = objs[-1]
        extra = {**last, "head": last["rev"], "rev": last["rev"] + 1, "before": "DONE",
                 "after": "DONE"}
        objs.append(extra)
        objs.append({**end, "rev": last["rev"] + 1})

    report = replay_record(tamper("supported.jsonl", edit))
    assert report.divergence is not None and report.divergence.kind == "SESSION_ENDED"


def test_tools_mode_accepts_calls_out_of_order_strict_does_not() -> None:
    def edit(objs: list[dict[str, Any]]) -> None:
        step = next(o for o in objs if o["t"] == "step" and len(o["calls"]) > 2)
        step["calls"][0], step["calls"][2] = step["calls"][2], step["calls"][0]

    record = tamper("supported.jsonl", edit)
    strict = replay_record(record, "strict")
    assert strict.divergence is not None and strict.divergence.kind == "UNRECORDED_TOOL_CALL"
    assert replay_record(record, "tools").ok


def flipped_bindings() -> dict[str, Binding]:
    """The default bindings with a 'changed' stance_judge that supports everything."""
    base = DEFAULT_BINDINGS["stance_judge"]

    def handler(inp: Any, ctx: Any) -> Envelope:
        env = base.skill.handler(inp, ctx)
        assert env.d is not None
        d = orjson.loads(orjson.dumps(env.d))
        for j in d["judgments"]:
            j["verdict"] = "SUPPORTS"
        return Envelope.model_validate({**env.to_dict(), "d": d})

    skill = Skill(name="stance_judge", input_model=base.skill.input_model,
                  output_model=base.skill.output_model, handler=handler,
                  rb_on_error="state", description="changed")
    return {**DEFAULT_BINDINGS, "stance_judge": Binding(skill, base.to_input, base.apply)}


def test_tools_mode_checks_a_changed_skill_against_recorded_evidence() -> None:
    report = replay_record(read_record(SESSIONS / "refuted.jsonl"), "tools",
                           bindings=flipped_bindings())
    d = report.divergence
    assert d is not None and (d.kind, d.state, d.skill) == ("ENVELOPE_MISMATCH", "VERIFY",
                                                           "stance_judge")
    assert d.path.startswith("d.judgments[0].") and d.expected != d.actual
    assert report.verdict_changed and report.actual.verdict == "SUPPORTS"


def test_live_mode_reruns_tools_and_reports_the_outcome_change() -> None:
    record = read_record(SESSIONS / "refuted.jsonl")
    assert replay_record(record, "live").ok
    with EvidenceIndex.open(":memory:") as empty:  # no documents, no facts
        report = replay_record(record, "live", index=empty)
    assert not report.ok and report.divergence is not None
    assert report.divergence.kind == "ENVELOPE_MISMATCH"
    assert report.verdict_changed and report.actual.verdict == "NOT_ENOUGH_INFO"
    assert report.actual.fsm == "DONE" and report.expected.verdict == "REFUTES"


def test_a_final_step_without_its_end_line_is_truncated() -> None:
    record = tamper("supported.jsonl", lambda objs: objs.pop())
    with pytest.raises(RecordError, match=r"line 9: truncated: the last step reaches"):
        replay_record(record)


def test_a_record_of_another_machine_is_refused() -> None:
    record, _, _ = noop_session(3)
    with pytest.raises(RecordError, match="machine: the record is of 'noop'"):
        replay_record(record, machine=DEFAULT_MACHINE)


def test_noop_sessions_replay_clean_and_detect_a_changed_step() -> None:
    record, machine, bindings = noop_session(50)
    report = replay_record(record, machine=machine, bindings=bindings)
    assert report.ok and report.steps == 50 and report.actual.fsm == "DONE"
    changed = record.entries[10].model_copy(update={"after": "DONE"})
    bad = Record(header=record.header, entries=(*record.entries[:10], changed,
                                                *record.entries[11:]), end=record.end)
    d = replay_record(bad, machine=machine, bindings=bindings).divergence
    assert d is not None and d.kind == "COMMIT_MISMATCH" and d.step == 11


@pytest.mark.parametrize(
    ("expected", "actual", "found"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"d": {"plans": [{"q": ["x", "y"]}]}}, {"d": {"plans": [{"q": ["x", "z"]}]}},
         ("d.plans[0].q[1]", "y", "z")),
        ({"a": 1, "b": 2}, {"a": 1}, ("b", 2, ABSENT)),
        ({"a": 1}, {"a": 1, "c": 3}, ("c", ABSENT, 3)),
        ({"a": [1, 2]}, {"a": [1]}, ("a[1]", 2, ABSENT)),
        ({"a": 1}, {"a": 1.0}, ("a", 1, 1.0)),
        ({"a": 1}, {"a": True}, ("a", 1, True)),
        ({"odd key": 1}, {"odd key": 2}, ("['odd key']", 1, 2)),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, ("(root)", "keys ['a', 'b']", "keys ['b', 'a']")),
        ([1], {"a": 1}, ("(root)", [1], {"a": 1})),
    ],
)
def test_first_diff(expected: Any, actual: Any, found: Any) -> None:
    assert first_diff(expected, actual) == found
