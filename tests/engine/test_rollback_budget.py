"""A rewind restores the session's state but never what it spent (issue: rollback must not
refill a budget), nor does a retry; and a FAILED session is reopened only when asked to,
on the record."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import Driver
from claimfsm.engine.errors import SessionFailed
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.runtime import Engine
from claimfsm.replay import export_record, replay_record
from claimfsm.replay.write import engine_tools
from claimfsm.skills.base import BaseIO, Skill
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.testing import AnyInput, Script, scripted_bindings

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


# -- a retried state spends what it spent ------------------------------------------------


def _calls_then_retries(answers: list[str]) -> Binding:
    """RETRIEVAL's skill: one tool call per attempt, then the next answer ("retry" or "ok")."""

    def handler(inp: AnyInput, ctx: SkillContext) -> Envelope:
        assert ctx.tools is not None
        ctx.tools.call("kb_lookup", {"q": "water boiling point", "lim": 1})
        st = inp.st
        if answers.pop(0) == "retry":
            return Envelope.retry("RATE_LIMITED", "the source asked to wait")
        return Envelope.ok({}, rev=st.rev + 1, fsm="EXTRACT")

    return memory_binding(Skill(name="retrieve", input_model=AnyInput, output_model=BaseIO,
                                handler=handler, rb_on_error="none",
                                description="a tool call, then a retry"))


def _retrying_driver(eng: Engine, answers: list[str]) -> Driver:
    def move(to: str) -> Script:
        return lambda st: Envelope.ok({}, rev=st["rev"] + 1, fsm=to)

    bindings = scripted_bindings(DEFAULT_MACHINE, {
        "PARSE_CLAIM": move("RETRIEVAL"), "EXTRACT": move("VERIFY"),
        "VERIFY": move("AGGREGATE"), "AGGREGATE": move("DONE")})
    bindings["retrieve"] = _calls_then_retries(answers)
    clock = FixedClock()
    return Driver(eng.store, bindings=bindings, tools=eng.driver.tools, clock=clock,
                  sleep=lambda s: clock.advance(timedelta(seconds=s)))


def test_a_retried_step_keeps_the_calls_it_spent() -> None:
    # Two attempts that each spend a call and ask for a retry, then one that would finish:
    # with a budget of two, the third call is refused and the session fails. A retry that
    # gave the spent calls back would let it make three calls and finish DONE.
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        driver = _retrying_driver(eng, ["retry", "retry", "ok"])
        head = driver.run(driver.start(CLAIM, config={"max_tool_calls": 2}).sid)
        history = list(eng.store.history(head.sid))
    retries = [r for r in history if r.fsm == "RETRIEVAL" and r.state.retry is not None]
    assert [r.state.runtime["budget"]["calls"] for r in retries] == [1, 2]
    assert head.fsm == "FAILED" and head.state.error is not None
    assert head.state.error["code"] == "BUDGET_EXCEEDED"
    made = [e for r in history for e in r.events
            if e["type"] == "ToolInvoked" and e["code"] != "BUDGET_EXCEEDED"]
    assert len(made) == 2 and head.state.runtime["budget"] == {"calls": 2}


def test_a_retried_step_within_the_budget_finishes() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        driver = _retrying_driver(eng, ["retry", "retry", "ok"])
        head = driver.run(driver.start(CLAIM, config={"max_tool_calls": 3}).sid)
    assert head.fsm == "DONE" and head.state.runtime["budget"] == {"calls": 3}
