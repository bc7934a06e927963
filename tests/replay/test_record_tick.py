"""``tick --record F`` (:func:`claimfsm.replay.people.tick_recorded`): when a tick
advances the recorded session, its passed deadline goes on in the record as a sealed
``person`` line (``act: timeout``), with the end line; other sessions the tick advances
are not written to it; strict replay of the record reproduces the session (every chain
hash checked). From the command line, a file that is not a session record, or that does
not end at the session's head, is RECORD_MISMATCH."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.replay.people import tick_recorded
from claimfsm.replay.record import read_record
from claimfsm.replay.runner import replay_record
from claimfsm.replay.write import Recorder
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.testing import FixedClock
from tests.engine.test_people import T0, _workflow


def test_a_recorded_timeout_replays_strictly(tmp_path: Path) -> None:
    wf = _workflow()
    path = tmp_path / "r.jsonl"
    with SQLiteStore(tmp_path / "t.db") as store:
        rec = Recorder(path, machine=wf.definition.name, finals=wf.definition.finals)
        driver = wf.driver(store, clock=FixedClock(T0))
        driver.on_step = rec
        sid = driver.start("c", before_create=lambda first: rec.header(first, None)).sid
        driver.run(sid)  # waits in APPROVE, its deadline a minute on
        other = wf.driver(store, clock=FixedClock(T0)).start("c").sid
        wf.driver(store, clock=FixedClock(T0)).run(other)
        rec.close()
        before = read_record(path)
        assert before.end is None and store.head(sid).fsm == "APPROVE"
        with Recorder(path, append=True, head=store.head(sid).rev, machine=wf.definition.name,
                      finals=wf.definition.finals) as again:
            late = wf.driver(store, clock=FixedClock(T0 + timedelta(seconds=61)))
            report = tick_recorded(late, again, sid)
        assert sorted(report.sids) == sorted([sid, other])
        record = read_record(path)
        (person,) = [e for e in record.entries if e.t == "person"]
        assert (person.act, person.before, person.after) == ("timeout", "APPROVE", "EXPIRED")
        assert record.end is not None and record.end.fsm == "EXPIRED"
        assert record.end.h == store.revision_hash(sid, store.head(sid).rev)
        assert {e.rev for e in record.entries} == set(range(1, store.head(sid).rev + 1))
    report = replay_record(record, machine=wf.definition, bindings=wf.bindings)
    assert report.ok and report.verified and report.actual.fsm == "EXPIRED"


def test_tick_refuses_a_record_that_is_not_the_sessions(tmp_path: Path) -> None:
    db, record = str(tmp_path / "s.db"), tmp_path / "r.jsonl"
    run = CliRunner().invoke
    res = run(main, ["verify", "NASA landed on the Moon in 1969.", "--db", db, "--review",
                     "always", "--record", str(record), "--json"])
    assert res.exit_code == 3, res.output
    sid = orjson.loads(res.output)["sid"]
    assert run(main, ["input", sid, "--db", db, "--json", '{"decision": "approve"}']
               ).exit_code == 0  # not recorded: the record now ends behind the head
    behind = run(main, ["tick", "--db", db, "--record", str(record), "--json"])
    assert behind.exit_code == 2
    assert orjson.loads(behind.output)["error"]["code"] == "RECORD_MISMATCH"
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not a record\n")
    res = run(main, ["tick", "--db", db, "--record", str(junk), "--json"])
    assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "RECORD_MISMATCH"
