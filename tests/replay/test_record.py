"""Session records: the line format, the recorder, the export, and the reader's checks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec
from claimfsm.engine.runtime import DEFAULT_FALLBACKS, Engine
from claimfsm.replay import replay_record
from claimfsm.replay.record import (
    FORMAT_VERSION,
    Record,
    RecordError,
    Rewind,
    Step,
    parse_record,
    read_record,
)
from claimfsm.replay.write import Recorder, export_record, tools_info
from claimfsm.skills.context import FixedClock
from claimfsm.testing import Script, fail, goto, scripted_driver

CLAIM = "Sydney is the capital of Australia."


@pytest.fixture
def engine() -> Iterator[Engine]:
    eng = Engine.open(None, config=EngineConfig(clock=FixedClock()))
    eng.driver.new_sid = lambda: "R1"
    yield eng
    eng.close()


def info(eng: Engine) -> dict[str, object]:
    return tools_info(documents=eng.index.count_documents(), facts=eng.index.count_facts(),
                      fallbacks=DEFAULT_FALLBACKS)


def record_run(eng: Engine, path: Path, claim: str = CLAIM) -> Record:
    with Recorder(path) as rec:
        eng.driver.on_step = rec
        first = eng.driver.start(claim)
        rec.header(first, info(eng))
        eng.driver.run(first.sid)
    eng.driver.on_step = None
    return read_record(path)


def lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_record_holds_header_steps_and_end_in_stable_key_order(
    engine: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    record = record_run(engine, path)
    objs = lines(path)
    assert list(objs[0]) == ["t", "format", "engine", "machine", "sid", "claim", "config",
                             "ts", "tools", "h", "version", "sum"]
    assert objs[0]["format"] == FORMAT_VERSION == 2 and objs[0]["claim"] == CLAIM
    assert objs[0]["tools"] == info(engine)
    step_keys = ["t", "head", "rev", "before", "after", "skill", "committed", "ts", "input",
                 "calls", "events", "envelope", "policy", "runtime", "h", "sum"]
    assert all(list(o) == step_keys for o in objs[1:-1])
    end = {k: v for k, v in objs[-1].items() if k != "sum"}
    assert end == {"t": "end", "rev": len(objs) - 2, "fsm": "DONE", "verdict": "REFUTES",
                   "h": objs[-2]["h"]}
    assert record.verified
    # The recorded envelopes are the driver's, revisions one by one, input as built.
    history = engine.store.history("R1")
    for step, rev in zip(record.steps, history[1:], strict=True):
        assert step.rev == rev.rev and step.after == rev.fsm and step.envelope == rev.envelope
        assert step.input["st"] == {"sid": "R1", "rev": rev.rev - 1, "fsm": step.before}
        assert step.ts == rev.ts
    calls = [c for s in record.steps for c in s.calls]
    assert calls and all(c.value is not None for c in calls if c.ok)


def test_export_rebuilds_the_recorded_bytes(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_run(engine, path)
    exported = export_record(engine.store, "R1", tools=info(engine))
    assert exported.to_bytes() == path.read_bytes()


def test_export_and_replay_keep_rewinds(engine: Engine) -> None:
    sid = engine.driver.start(CLAIM).sid
    for _ in range(3):
        engine.driver.step(sid)
    engine.driver.rollback(sid, 1)
    engine.driver.run(sid)
    record = export_record(engine.store, sid, tools=info(engine))
    rewinds = [e for e in record.entries if isinstance(e, Rewind)]
    assert [(r.head, r.rev, r.to) for r in rewinds] == [(3, 4, 1)]
    again = parse_record(record.to_bytes())
    assert again == record
    report = replay_record(again)
    assert report.ok and report.actual.verdict == "REFUTES"


def test_recorder_appends_across_runs_and_keeps_uncommitted_steps(tmp_path: Path) -> None:
    machine = MachineDef(
        name="ab", initial="A", failure="FAILED",
        states=(StateSpec("A", skill="a", retry=RetryPolicy(codes=frozenset({"FLAKY"}),
                                                            backoff_s=60)),
                StateSpec("DONE", final=True), StateSpec("FAILED", final=True)),
        transitions=(("A", "A"), ("A", "DONE"), ("A", "FAILED")))

    def script() -> dict[str, list[Script]]:
        return {"A": [goto("A", x=1), fail("FLAKY"), goto("DONE")]}

    path = tmp_path / "ab.jsonl"
    clock = FixedClock()
    rec = Recorder(path, machine="ab", finals=machine.finals)
    driver = scripted_driver(machine, script(), clock=clock, on_step=rec)
    first = driver.start("c")
    rec.header(first, None)
    driver.step(first.sid)          # rev 1
    driver.step(first.sid)          # rev 2: a retry is scheduled 60 s on
    driver.step(first.sid)          # not due yet: nothing committed
    rec.close()
    with Recorder(path, append=True, head=2, machine="ab", finals=machine.finals) as again:
        driver.on_step = again
        clock.advance(timedelta(seconds=120))
        driver.step(first.sid)      # rev 3: DONE
    record = read_record(path)
    assert [(s.head, s.rev, s.committed) for s in record.steps] == [
        (0, 1, True), (1, 2, True), (2, None, False), (2, 3, True)]
    assert record.steps[2].envelope["e"]["code"] == "RETRY_NOT_DUE"
    assert record.end is not None and record.end.fsm == "DONE"
    fresh = scripted_driver(machine, script())
    report = replay_record(record, machine=machine, bindings=fresh.bindings)
    assert report.ok and report.actual.fsm == "DONE" and report.steps == 4


GOOD_HEADER = {"t": "header", "format": 1, "engine": "0", "machine": "m", "sid": "S",
               "claim": "c", "config": {}, "ts": "2026-01-01T00:00:00+00:00", "tools": None}


def step_line(head: int, rev: int | None, **kw: object) -> dict[str, object]:
    line = {"t": "step", "head": head, "rev": rev, "before": "A", "after": "A", "skill": "a",
            "committed": rev is not None, "ts": "2026-01-01T00:00:00+00:00",
            "input": {}, "calls": [], "envelope": {"s": "ok"}}
    line.update(kw)
    return line


def blob(*objs: object, tail: bytes = b"") -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objs) + tail


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"", 1, "empty record"),
        (blob(step_line(0, 1)), 1, "first line must be the header"),
        (blob({**GOOD_HEADER, "format": 99}), 1, "format 99 is not supported"),
        (blob(GOOD_HEADER, step_line(0, 1), tail=b'{"t":"step","he'), 3, "truncated"),
        (blob(GOOD_HEADER) + b"not json\n" + blob(step_line(0, 1)), 2, "not JSON"),
        (blob(GOOD_HEADER, [1, 2]), 2, "expected a JSON object"),
        (blob(GOOD_HEADER, {"t": "nope"}), 2, "unknown line kind"),
        (blob(GOOD_HEADER, {k: v for k, v in step_line(0, 1).items() if k != "envelope"}),
         2, "envelope: Field required"),
        (blob(GOOD_HEADER, step_line(0, 1), step_line(2, 3)), 3, "head is 2, expected 1"),
        (blob(GOOD_HEADER, step_line(0, 5)), 2, "rev is 5, expected head+1 = 1"),
        (blob(GOOD_HEADER, step_line(0, 1, ts="yesterday")), 2, "ts: Value error, not an ISO"),
        (blob({**GOOD_HEADER, "ts": "2026-01-01T00:00:00"}), 1, "without a timezone"),
        (blob(GOOD_HEADER, step_line(0, None, after="B")), 2, "uncommitted step cannot"),
        (blob(GOOD_HEADER, step_line(0, 1), GOOD_HEADER), 3, "a second header"),
        (blob(GOOD_HEADER, step_line(0, 1), {"t": "end", "rev": 1, "fsm": "A",
                                             "verdict": None}, step_line(1, 2)),
         4, "a line after the end line"),
        (blob(GOOD_HEADER, step_line(0, 1), {"t": "end", "rev": 7, "fsm": "A",
                                             "verdict": None}), 3, "end.rev is 7"),
    ],
)
def test_malformed_records_name_the_line(data: bytes, line: int, words: str) -> None:
    with pytest.raises(RecordError) as info_:
        parse_record(data, source="x.jsonl")
    err = info_.value
    assert err.code == "BAD_RECORD" and err.line == line
    assert f"x.jsonl line {line}: " in str(err) and words in str(err)


def test_a_well_formed_record_parses_and_reencodes_identically() -> None:
    data = blob(GOOD_HEADER, step_line(0, 1), step_line(1, None),
                {"t": "rewind", "head": 1, "rev": 2, "to": 0, "ts": "2026-01-01T00:00:00+00:00"},
                step_line(2, 3))
    record = parse_record(data)
    assert [type(e) for e in record.entries] == [Step, Step, Rewind, Step]
    assert parse_record(record.to_bytes()) == record


def test_reading_a_missing_file_is_a_bad_record(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="cannot read"):
        read_record(tmp_path / "absent.jsonl")
