"""People in the loop from the command line: verify --review stops with exit 3 and code
WAITING, step commits nothing, input (--json/--file) commits one revision, stale, bad,
empty-actor and not-waiting inputs fail with their codes; pauses, resume, edit; tick
advances a due session once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.state.model import RetryState, Revision
from claimfsm.state.open import open_store

CLAIM = "NASA landed on the Moon in 1969."


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def js(result: Result) -> dict:  # type: ignore[type-arg]
    out = orjson.loads(result.output)
    assert isinstance(out, dict)
    return out


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def _review(db: str) -> dict:  # type: ignore[type-arg]
    res = run("verify", CLAIM, "--db", db, "--review", "always", "--json")
    assert res.exit_code == 3, res.output
    return js(res)


def test_verify_waits_in_review_and_input_finishes_it(db: str, tmp_path: Path) -> None:
    out = _review(db)
    sid, rev = out["sid"], out["rev"]
    assert (out["fsm"], out["status"], out["waiting"]["kind"]) == ("REVIEW", "WAITING", "input")
    step = run("step", sid, "--db", db, "--json")
    assert step.exit_code == 3 and js(step)["committed"] is False
    assert js(step)["envelope"]["e"]["code"] == "WAITING"
    assert js(run("show", sid, "--db", db, "--json"))["rev"] == rev  # nothing committed
    listed = js(run("sessions", "--db", db, "--json"))["items"]
    assert [(i["sid"], i["status"]) for i in listed] == [(sid, "WAITING")]
    text = run("show", sid, "--db", db).output
    assert "WAITING for input (ReviewInput)" in text
    bad = run("input", sid, "--db", db, "--json", '{"decision": "override"}', "--json-out")
    assert bad.exit_code == 2 and js(bad)["error"]["code"] == "BAD_INPUT"
    assert js(bad)["error"]["msg"].startswith("input.reason: required")
    nojson = run("input", sid, "--db", db, "--json", "{nope")
    assert nojson.exit_code == 2 and "BAD_INPUT" in nojson.output
    empty = run("input", sid, "--db", db, "--json", '{"decision": "approve"}', "--actor", "")
    assert empty.exit_code == 2 and "actor" in empty.output
    stale = run("input", sid, "--db", db, "--json", '{"decision": "approve"}',
                "--expected-rev", str(rev - 1))
    assert stale.exit_code == 2 and "REV_CONFLICT" in stale.output
    payload = tmp_path / "decision.json"
    payload.write_text('{"decision": "approve"}')
    ok = run("input", sid, "--db", db, "--file", str(payload), "--actor", "ann",
             "--expected-rev", str(rev), "--json-out")
    assert ok.exit_code == 0, ok.output
    done = js(ok)
    assert (done["fsm"], done["rev"], done["provenance"]) == ("DONE", rev + 1, "reviewer:ann")
    head = js(run("show", sid, "--db", db, "--json"))
    assert [e["type"] for e in head["events"]] == ["InputReceived"]
    again = run("input", sid, "--db", db, "--json", '{"decision": "approve"}')
    assert again.exit_code == 2 and "NOT_WAITING" in again.output
    assert run("fsck", "--db", db).exit_code == 0


def test_pause_after_edit_and_resume(db: str) -> None:
    res = run("verify", CLAIM, "--db", db, "--pause-after", "RETRIEVAL", "--json")
    assert res.exit_code == 3, res.output
    out = js(res)
    assert out["fsm"] == "EXTRACT" and out["waiting"]["when"] == "after"
    sid = out["sid"]
    refused = run("edit", sid, "--db", db, "--set", "verdict=null")
    assert refused.exit_code == 2 and "NOT_EDITABLE" in refused.output
    shape = run("edit", sid, "--db", db, "--set", 'subclaims=[{"id": "s1"}]')
    assert shape.exit_code == 2 and "BAD_INPUT" in shape.output
    sub = [{"id": "s1", "c": "NASA landed on the Moon in 1969."}]
    edited = run("edit", sid, "--db", db, "--set", "subclaims=" + orjson.dumps(sub).decode(),
                 "--actor", "eve", "--json")
    assert edited.exit_code == 0, edited.output
    (event,) = js(edited)["events"]
    assert event["type"] == "Edited" and event["changes"][0]["field"] == "subclaims"
    resumed = run("resume", sid, "--db", db, "--json")
    assert resumed.exit_code == 0 and js(resumed)["fsm"] == "DONE"
    assert run("resume", sid, "--db", db).exit_code == 2


def test_edit_of_a_running_session_is_not_editable(db: str) -> None:
    sid = run("start", CLAIM, "--db", db).output.strip()
    run("step", sid, "--db", db)
    res = run("edit", sid, "--db", db, "--set", "plans=[]", "--json")
    assert res.exit_code == 2 and js(res)["error"]["code"] == "NOT_EDITABLE"


def test_unknown_pause_state_is_bad_input(db: str) -> None:
    res = run("start", CLAIM, "--db", db, "--pause-before", "NOPE")
    assert res.exit_code == 2 and "pause_before" in res.output


def test_tick_advances_a_due_retry_once(db: str) -> None:
    sid = run("start", CLAIM, "--db", db).output.strip()
    past = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="microseconds")
    with open_store(db) as store:
        head = store.head(sid)
        retry = RetryState(state="PARSE_CLAIM", attempts=1, next_at=past, code="RATE_LIMITED")
        state = head.state.model_copy(update={"retry": retry})
        store.commit(Revision(sid=sid, rev=1, parent_rev=0, fsm="PARSE_CLAIM", skill=None,
                              envelope=None, state=state, ts=past, events=[]), expected_rev=0)
        assert store.due("9999-01-01T00:00:00.000000") == [sid]
    first = run("tick", "--db", db, "--json")
    assert first.exit_code == 0, first.output
    assert js(first) == {"due": 1, "advanced": 1, "skipped": 0, "sids": [sid], "conflicts": []}
    head = js(run("show", sid, "--db", db, "--json"))
    assert head["fsm"] == "DONE" and head["state"]["retry"] is None
    assert js(run("tick", "--db", db, "--json"))["due"] == 0


def test_tick_logs_its_steps_in_the_chosen_format(db: str) -> None:
    sid = run("start", CLAIM, "--db", db).output.strip()
    past = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="microseconds")
    with open_store(db) as store:
        head = store.head(sid)
        retry = RetryState(state="PARSE_CLAIM", attempts=1, next_at=past, code="RATE_LIMITED")
        store.commit(Revision(sid=sid, rev=1, parent_rev=0, fsm="PARSE_CLAIM", skill=None,
                              envelope=None, state=head.state.model_copy(update={
                                  "retry": retry}), ts=past, events=[]), expected_rev=0)
    done = CliRunner().invoke(main, ["tick", "--db", db, "--log-format", "json"])
    assert done.exit_code == 0, done.output
    lines = [orjson.loads(line) for line in done.stderr.splitlines()]
    steps = [line for line in lines if line["event"] == "step"]
    assert steps and {line["sid"] for line in steps} == {sid}
    assert [line["rev"] for line in steps] == list(range(2, 2 + len(steps)))
    assert lines[-1]["event"] == "tick" and (lines[-1]["due"], lines[-1]["advanced"]) == (1, 1)
    text = CliRunner().invoke(main, ["tick", "--db", db, "--log-format", "text"])
    assert text.exit_code == 0 and " tick due=0 advanced=0 skipped=0" in text.stderr
    bad = CliRunner().invoke(main, ["tick", "--db", db, "--log-format", "xml"])
    assert bad.exit_code == 2 and "--log-format" in bad.output


def test_report_html_says_who_decided_and_why(db: str, tmp_path: Path) -> None:
    sid = _review(db)["sid"]
    html = tmp_path / "r.html"
    assert run("report", sid, "--db", db, "--html", str(html)).exit_code == 0
    assert 'id="waiting"' in html.read_text()
    decision = '{"decision": "override", "verdict": "REFUTES", "reason": "wrong year"}'
    assert run("input", sid, "--db", db, "--json", decision, "--actor", "ann").exit_code == 0
    assert run("report", sid, "--db", db, "--html", str(html)).exit_code == 0
    text = html.read_text()
    assert 'id="verdict-label">REFUTES' in text
    assert 'id="provenance">by reviewer:ann: wrong year' in text and 'id="waiting"' not in text


def test_sessions_marks_and_filters_the_waiting(db: str) -> None:
    waiting = _review(db)["sid"]
    done = run("verify", CLAIM, "--db", db, "--json")
    assert done.exit_code == 0
    text = run("sessions", "--db", db).output
    assert f"{waiting}   REVIEW*" in text and "DONE*" not in text
    only = js(run("sessions", "--db", db, "--waiting", "--json"))["items"]
    assert [i["sid"] for i in only] == [waiting]


def test_claimfsm_toml_sets_review_and_pause_points(db: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claimfsm.toml").write_text('review = "always"\npause_before = "VERIFY"\n')
    res = run("verify", CLAIM, "--db", db, "--json")
    assert res.exit_code == 3 and js(res)["waiting"]["state"] == "VERIFY"
    sid = js(res)["sid"]
    profile = js(run("show", sid, "--db", db, "--json"))["profile"]
    assert profile["review"] == "always" and profile["pause_before"] == ["VERIFY"]
    res = run("resume", sid, "--db", db, "--json")
    assert res.exit_code == 3 and js(res)["fsm"] == "REVIEW"
    (tmp_path / "claimfsm.toml").write_text('review = "sometimes"\n')
    bad = run("start", CLAIM, "--db", db)
    assert bad.exit_code == 2 and "review" in bad.output
