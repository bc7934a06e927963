"""A rewind restores the session's state but never what it spent (issue: rollback must not
refill a budget), and a FAILED session is reopened only when asked to, on the record."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.errors import SessionFailed
from claimfsm.engine.runtime import Engine
from claimfsm.replay import export_record, replay_record
from claimfsm.replay.write import engine_tools
from claimfsm.skills.context import FixedClock

CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."


def failed_on_budget(eng: Engine) -> str:
    head = eng.driver.start(CLAIM, config={"max_tool_calls": 2})
    head = eng.driver.run(head.sid)
    assert head.fsm == "FAILED" and head.envelope is not None
    assert head.envelope["e"]["code"] == "BUDGET_EXCEEDED"
    return head.sid


def test_rollback_of_a_failed_session_is_refused_without_reopen() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        sid = failed_on_budget(eng)
        before = eng.store.head(sid).rev
        with pytest.raises(SessionFailed) as err:
            eng.driver.rollback(sid, 1)
        assert err.value.code == "SESSION_FAILED"
        assert eng.store.head(sid).rev == before  # nothing committed


def test_reopen_keeps_the_spent_budget_so_the_next_call_still_fails() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        sid = failed_on_budget(eng)
        spent = eng.store.head(sid).state.runtime["budget"]
        back = eng.driver.rollback(sid, 1, reopen=True)
        assert back.fsm == "RETRIEVAL"
        assert back.state.runtime["budget"] == spent
        assert {"type": "Rewind", "to": 1, "reopen": True} in back.events
        again = eng.driver.run(sid)
        assert again.fsm == "FAILED"
        assert again.envelope is not None
        assert again.envelope["e"]["code"] == "BUDGET_EXCEEDED"
        assert again.state.runtime["budget"]["calls"] >= spent["calls"]


def test_a_rewind_of_a_live_session_never_gives_calls_back() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        head = eng.driver.run(eng.driver.start(CLAIM).sid)
        assert head.fsm == "DONE"
        spent = head.state.runtime["budget"]["calls"]
        assert spent > 0
        back = eng.driver.rollback(head.sid, 1)
        assert back.state.runtime["budget"]["calls"] == spent
        assert eng.store.get(head.sid, 1).state.runtime.get("budget", {}).get("calls", 0) < spent


def test_a_reopened_session_exports_and_replays_exactly() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        sid = failed_on_budget(eng)
        eng.driver.rollback(sid, 1, reopen=True)
        eng.driver.run(sid)
        record = export_record(eng.store, sid, tools=engine_tools(eng))
    assert any(getattr(e, "reopen", False) for e in record.entries)
    report = replay_record(record, mode="strict")
    assert report.ok, report


def test_cli_rollback_needs_reopen_for_a_failed_session(tmp_path: object) -> None:
    db = f"{tmp_path}/s.db"
    runner = CliRunner()
    out = runner.invoke(main, ["verify", CLAIM, "--db", db, "--max-tool-calls", "2", "--json"])
    assert out.exit_code == 1
    sid = out.output.split('"sid": "')[1].split('"')[0]
    refused = runner.invoke(main, ["rollback", sid, "--to", "1", "--db", db, "--json"])
    assert refused.exit_code == 2 and "SESSION_FAILED" in refused.output
    assert refused.exception is None or isinstance(refused.exception, SystemExit)
    ok = runner.invoke(main, ["rollback", sid, "--to", "1", "--reopen", "--db", db, "--json"])
    assert ok.exit_code == 0, ok.output
    assert '"fsm": "RETRIEVAL"' in ok.output
