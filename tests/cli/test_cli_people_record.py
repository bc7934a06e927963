"""A live record goes on past a wait: ``input``, ``resume`` and ``edit`` with
``--record F`` append the person's sealed line and the steps that follow to the record
``verify --record F`` began, so strict replay reproduces the session byte for byte (the
file is the one ``export`` writes); a record of another session, or one that does not end
at the session's head, is RECORD_MISMATCH and nothing is committed."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.replay.record import read_record
from claimfsm.state.open import open_store

CLAIM = "NASA landed on the Moon in 1969."


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _waiting(db: str, record: Path, *extra: str) -> str:
    res = run("verify", CLAIM, "--db", db, "--record", str(record), "--json", *extra)
    assert res.exit_code == 3, res.output
    return str(orjson.loads(res.output)["sid"])


def _replays_as_exported(db: str, record: Path, sid: str, tmp_path: Path) -> None:
    res = run("replay", str(record), "--json")
    report = orjson.loads(res.output)
    assert res.exit_code == 0 and report["ok"] and report["verified"], res.output
    exported = tmp_path / "export.jsonl"
    assert run("export", sid, "--db", db, "-o", str(exported)).exit_code == 0
    assert record.read_bytes() == exported.read_bytes()


def test_input_sent_back_then_approved_goes_on_in_the_record(tmp_path: Path) -> None:
    db, record = str(tmp_path / "s.db"), tmp_path / "r.jsonl"
    sid = _waiting(db, record, "--review", "always")
    back = run("input", sid, "--db", db, "--actor", "ann", "--record", str(record),
               "--json-out", "--json",
               '{"decision": "send_back", "queries": ["Apollo 11 landing"], "reason": "more"}')
    assert back.exit_code == 3, back.output  # retrieved again, judged, waits in REVIEW again
    acts = [e.act for e in read_record(record).entries if e.t == "person"]
    assert acts == ["input"] and read_record(record).end is None
    done = run("input", sid, "--db", db, "--actor", "bob", "--record", str(record),
               "--json-out", "--json", '{"decision": "approve"}')
    assert done.exit_code == 0, done.output
    rec = read_record(record)
    assert [e.actor for e in rec.entries if e.t == "person"] == ["ann", "bob"]
    assert rec.end is not None and rec.end.fsm == "DONE"
    _replays_as_exported(db, record, sid, tmp_path)


def test_pause_edit_and_resume_go_on_in_the_record(tmp_path: Path) -> None:
    db, record = str(tmp_path / "s.db"), tmp_path / "r.jsonl"
    sid = _waiting(db, record, "--pause-before", "EXTRACT")
    edited = run("edit", sid, "--db", db, "--record", str(record), "--json",
                 "--set", 'subclaims=[{"id": "s1", "c": "NASA landed on the Moon in 1969."}]')
    assert edited.exit_code == 0, edited.output
    resumed = run("resume", sid, "--db", db, "--record", str(record), "--json")
    assert resumed.exit_code == 0, resumed.output
    acts = [e.act for e in read_record(record).entries if e.t == "person"]
    assert acts == ["edit", "resume"]
    _replays_as_exported(db, record, sid, tmp_path)


def test_a_record_that_is_not_the_sessions_head_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    first, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    sid = _waiting(db, first, "--review", "always")
    _waiting(db, other, "--review", "always")
    res = run("input", sid, "--db", db, "--record", str(other), "--json-out",
              "--json", '{"decision": "approve"}')
    assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "RECORD_MISMATCH"
    with open_store(db) as store:
        assert store.head(sid).fsm == "REVIEW"  # nothing committed
    # A person's input given without --record: the record falls behind the head.
    sub = '[{"id": "s1", "c": "NASA landed on the Moon in 1969."}]'
    assert run("edit", sid, "--db", db, "--set", "subclaims=" + sub).exit_code == 0
    res = run("input", sid, "--db", db, "--record", str(first), "--json-out",
              "--json", '{"decision": "approve"}')
    assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "RECORD_MISMATCH"
    assert "ends at revision" in orjson.loads(res.output)["error"]["msg"]
    with open_store(db) as store:
        assert store.head(sid).fsm == "REVIEW"
