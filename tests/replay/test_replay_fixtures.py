"""The shipped recorded sessions: each replays clean, shows what its name promises, and
is exactly what the generator script produces today."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from claimfsm.replay import replay_record
from claimfsm.replay.record import Record, parse_record, read_record
from claimfsm.state.memory import MemoryStore
from tests.replay.sealing import resealed

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
NAMES = sorted(p.stem for p in SESSIONS.glob("*.jsonl"))


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_sessions",
                                                  SESSIONS / "make_sessions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(name: str) -> Record:
    return read_record(SESSIONS / f"{name}.jsonl")


def test_every_promised_session_ships() -> None:
    assert set(NAMES) == {"supported", "refuted", "not_enough_info", "retry",
                          "rollback_state", "rollback_tools", "rate_limit_fallback",
                          "model_backed", "model_fallback"}


@pytest.mark.parametrize("name", NAMES)
def test_fixture_replays_clean_in_strict_mode(name: str) -> None:
    report = replay_record(load(name), "strict")
    assert report.ok, report.divergence
    assert report.actual == report.expected


@pytest.mark.parametrize("name", NAMES)
def test_fixture_replays_clean_with_tools_from_the_record(name: str) -> None:
    assert replay_record(load(name), "tools").ok


@pytest.mark.parametrize(
    ("name", "verdict"),
    [("supported", "SUPPORTS"), ("refuted", "REFUTES"), ("not_enough_info", "NOT_ENOUGH_INFO")],
)
def test_verdict_fixtures_match_the_demo_claims(name: str, verdict: str) -> None:
    record = load(name)
    demo = orjson.loads((SESSIONS.parent / "demo_claims.json").read_bytes())
    assert {"claim": record.header.claim, "expected": verdict} in demo
    assert record.end is not None and record.end.verdict == verdict


def test_retry_fixture_retries_after_a_rate_limit_and_goes_on() -> None:
    steps = load("retry").steps
    retried = [i for i, s in enumerate(steps) if s.envelope["s"] == "retry"]
    assert retried, "no retry in the retry fixture"
    i = retried[0]
    assert steps[i].envelope["e"]["code"] == "RATE_LIMITED" and steps[i].committed
    assert steps[i + 1].ts > steps[i].ts  # the clock waited out the backoff
    assert steps[i + 1].calls[0].ok and steps[i + 1].calls[0].args == steps[i].calls[0].args


def test_rollback_fixtures_roll_back_as_named() -> None:
    state = [s for s in load("rollback_state").steps if s.envelope["rb"] == "state"]
    assert state and state[0].envelope["s"] == "error" and state[0].after == "FAILED"
    tools = load("rollback_tools")
    rb = [s for s in tools.steps if s.envelope["rb"] == "tools"]
    assert rb and rb[0].envelope["e"]["code"] == "TOOLS_UNAVAILABLE"
    composed = [s for s in tools.steps if s.envelope["d"] and "tr" in s.envelope["d"]]
    assert composed, "the requests the rollback removes were never composed"
    assert tools.header.tools is None


def test_rollback_fixtures_restore_the_state_they_name() -> None:
    store = MemoryStore()
    report = replay_record(load("rollback_tools"), store=store)
    assert report.ok and report.actual.fsm == "FAILED"
    history = store.history("rollback_tools")
    before, after = history[-2].state, history[-1].state
    entry = history[before.entry_rev].state  # where the session entered RETRIEVAL
    assert before.tool_requests and after.tool_requests == entry.tool_requests == []
    assert after.subclaims == before.subclaims and after.plans == before.plans  # kept
    store = MemoryStore()
    assert replay_record(load("rollback_state"), store=store).ok
    first, failed = store.history("rollback_state")
    assert failed.state.model_dump(exclude={"fsm", "error", "entry_rev", "retry", "runtime"}) \
        == first.state.model_dump(exclude={"fsm", "error", "entry_rev", "retry", "runtime"})
    assert failed.state.error is not None and failed.state.error["code"] == "QUERY_TOO_LONG"


def test_rate_limit_fixture_falls_back_to_web_search() -> None:
    calls = [c for s in load("rate_limit_fallback").steps for c in s.calls]
    limited = [i for i, c in enumerate(calls) if c.code == "RATE_LIMITED"]
    assert limited
    fallback = calls[limited[0] + 1]
    assert fallback.tool == "web_search" and fallback.attempt == 2 and fallback.ok
    assert fallback.id == calls[limited[0]].id


def test_fixtures_are_what_the_generator_writes_today(tmp_path: Path) -> None:
    written = generator().main(tmp_path)
    assert sorted(p.stem for p in written) == NAMES
    for p in written:
        assert p.read_bytes() == (SESSIONS / p.name).read_bytes(), (
            f"{p.name} is stale: run fixtures/sessions/make_sessions.py")


def test_a_tampered_fixture_fails_with_the_right_report() -> None:
    objs = [orjson.loads(x) for x in (SESSIONS / "supported.jsonl").read_bytes().splitlines()]
    extract = next(o for o in objs if o["t"] == "step" and o["skill"] == "evidence_extract")
    sentence = extract["calls"][1]["value"]["sentences"][0]
    sentence["text"] = "The Moon landing never happened."
    tampered = parse_record(resealed(objs))
    report = replay_record(tampered)
    d = report.divergence
    assert not report.ok and d is not None
    assert (d.kind, d.state, d.skill) == ("ENVELOPE_MISMATCH", "EXTRACT", "evidence_extract")
    assert d.step == objs.index(extract) and d.path.startswith("d.evidence.s1[")
    # The planted sentence now ranks first, so the first difference is the top item's id.
    assert (d.path, d.expected, d.actual) == ("d.evidence.s1[0].id", "apollo-11#1",
                                              "apollo-11#0")
    assert report.verdict_changed and report.actual.verdict == "REFUTES"


OLD_RECORDS = sorted((Path(__file__).resolve().parents[1] / "data" / "records").glob("*.jsonl"))


@pytest.mark.parametrize("path", OLD_RECORDS, ids=lambda p: p.name)
def test_records_written_by_0_1_0_still_replay_byte_for_byte(path: Path) -> None:
    # Written before the one-package rename (engine 0.1.0, modules fsm/skills/state): no
    # name stored in a record changed meaning, so both replay modes still agree exactly.
    record = read_record(path)
    assert record.header.engine == "0.1.0"
    for mode in ("strict", "tools"):
        report = replay_record(record, mode)
        assert report.ok, report.divergence
        assert report.actual == report.expected
