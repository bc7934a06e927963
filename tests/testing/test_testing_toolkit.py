"""claimfsm.testing.toolkit: run_skill, step_once/fire, matchers, scripted tools and skills."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from claimfsm.engine.errors import UnknownSkill
from claimfsm.skills.context import ToolCall
from claimfsm.skills.envelope import Envelope
from claimfsm.testing import (
    ANY,
    ANY_ID,
    ANY_TS,
    FixedClock,
    ScriptedTools,
    SeqIds,
    ToolFailure,
    approx,
    fail,
    fire,
    goto,
    make_state,
    matches,
    noop_session,
    retry,
    run_skill,
    scripted_driver,
    scripted_skill,
    step_once,
)

ST = {"sid": "S1", "rev": 4, "fsm": "PARSE_CLAIM"}


def test_run_skill_by_name_on_a_dict() -> None:
    env = run_skill("parse_claim", {"claim": "NASA landed on the Moon in 1969.", "st": ST})
    assert env.s == "ok" and env.sp is not None and (env.sp.rev, env.sp.fsm) == (5, "RETRIEVAL")
    assert env.d is not None and env.d["claims"] == [
        {"id": "s1", "c": "NASA landed on the Moon in 1969."}]


def test_run_skill_reports_bad_input_as_data_and_unknown_names_as_errors() -> None:
    env = run_skill("parse_claim", {"claim": "x"})
    assert env.s == "error" and env.e is not None and env.e.code == "BAD_INPUT"
    assert env.e.msg.startswith("st:")
    with pytest.raises(UnknownSkill, match="no skill 'nope'"):
        run_skill("nope", {})


def test_run_skill_uses_the_given_clock() -> None:
    # What counts as recent is judged against the clock: news only for a recent year.
    inp = {"claims": [{"id": "s1", "c": "The mayor resigned in 2025."}], "st": ST}
    then = run_skill("evidence_query_plan", inp,
                     clock=FixedClock(datetime(2026, 5, 1, tzinfo=UTC)))
    later = run_skill("evidence_query_plan", inp,
                      clock=FixedClock(datetime(2030, 5, 1, tzinfo=UTC)))
    assert then.d is not None and "news" in then.d["plans"][0]["src"]
    assert later.d is not None and "news" not in later.d["plans"][0]["src"]


def test_run_skill_with_scripted_tools() -> None:
    tools = ScriptedTools({"page_fetch": {"doc_id": "d1", "title": "T", "source": "wiki",
                                          "text": "Honey never spoils."},
                           "sentence_extract": ToolFailure("NOT_FOUND")})
    inp = {"claims": [{"id": "s1", "c": "Honey never spoils."}],
           "hits": [{"for": "s1", "doc_id": "d1", "title": "T", "source": "wiki",
                     "score": 1.0}],
           "facts": [], "st": {"sid": "S1", "rev": 3, "fsm": "EXTRACT"}}
    env = run_skill("evidence_extract", inp, tools=tools)
    assert [c.tool for c in tools.history] == ["page_fetch", "sentence_extract"]
    assert env.d is not None and env.d["skipped"] == [
        {"doc_id": "d1", "tool": "sentence_extract", "code": "NOT_FOUND"}]


def test_step_once_fires_the_real_binding_and_driver() -> None:
    env, nxt = step_once("PARSE_CLAIM", make_state("NASA landed on the Moon in 1969."))
    assert env.s == "ok" and nxt == "RETRIEVAL"
    result = fire("PARSE_CLAIM", make_state("NASA landed on the Moon in 1969."))
    assert result.revision is not None and result.revision.state.subclaims == [
        {"id": "s1", "c": "NASA landed on the Moon in 1969."}]


def test_step_once_with_an_envelope_override() -> None:
    env, nxt = step_once("RETRIEVAL", envelope=fail("BOOM", rb="tools"))
    assert nxt == "FAILED" and env.e is not None and env.e.code == "BOOM"
    env, nxt = step_once("RETRIEVAL", envelope=retry("RATE_LIMITED"))
    assert nxt == "RETRIEVAL" and env.s == "retry"
    env, nxt = step_once("VERIFY", envelope=goto("DONE", judgments=[]))
    assert nxt == "VERIFY" and env.e is not None and env.e.code == "ILLEGAL_TRANSITION"
    env, nxt = step_once("AGGREGATE", envelope=goto("DONE", verdict={"label": "SUPPORTS"}))
    assert nxt == "DONE" and env.s == "ok"


def test_fire_runs_retrieval_against_scripted_tools() -> None:
    state = make_state(
        "Honey never spoils.", fsm="RETRIEVAL",
        subclaims=[{"id": "s1", "c": "Honey never spoils."}],
        plans=[{"id": "s1", "q": ["honey spoils"], "src": ["wiki"], "lim": 2}],
        tool_requests=[{"id": "t1", "tool": "search", "for": "s1",
                        "args": {"q": "honey spoils", "lim": 2, "src": "wiki"}}])
    tools = ScriptedTools({"search": {"hits": []}})
    result = fire("RETRIEVAL", state, tools=tools)
    assert result.committed and result.after == "RETRIEVAL"
    assert [c.tool for c in result.calls] == ["search"]
    assert result.revision is not None
    assert result.revision.state.tool_results[0] == {
        "id": "t1", "for": "s1", "tool": "search", "ok": True, "msg": "", "value": {"hits": []}}


def test_matchers_compare_inside_structures() -> None:
    got = {"id": "t7", "ts": "2026-01-01T00:00:00.000000+00:00", "score": 0.3333333,
           "note": "abc-12", "x": object()}
    assert got == {"id": ANY_ID, "ts": ANY_TS, "score": approx(1 / 3), "note":
                   matches(r"[a-z]+-\d+"), "x": ANY}
    assert ANY_ID != "" and ANY_ID != 7 and ANY_ID != "a b"
    assert ANY_TS != "2026-01-01T00:00:00" and ANY_TS != "yesterday" and ANY_TS != 5
    assert datetime(2026, 1, 1, tzinfo=UTC) == ANY_TS
    assert approx(1.0) != 1.1 and approx(1.0) != True  # noqa: E712
    assert approx(100, rel=0.01) == 100.5
    assert matches("a+") != "ab" and matches("a+") != 3
    assert repr(approx(2.0)) == "approx(2.0)"


def test_scripted_tools_answer_in_order_and_fail_unscripted_calls() -> None:
    tools = ScriptedTools({"search": [{"hits": [1]}, ToolFailure("RATE_LIMITED")],
                           "kb_lookup": lambda args: {"facts": [args["q"]]}})
    assert tools.call("search", {"q": "a"}).value == {"hits": [1]}
    second = tools.call("search", {"q": "a"}, call_id="c9", key="s1")
    assert (second.ok, second.code, second.id, second.key) == (False, "RATE_LIMITED", "c9", "s1")
    assert tools.call("search", {"q": "a"}).code == "UNSCRIPTED_TOOL_CALL"
    assert tools.call("kb_lookup", {"q": "z"}).value == {"facts": ["z"]}
    assert tools.call("page_fetch", {}).code == "UNSCRIPTED_TOOL_CALL"
    whole = ToolCall(id="x", tool="t", args={}, ok=True, value={"v": 1})
    assert ScriptedTools({"t": whole}).call("t", {}) is whole


def test_scripted_skill_answers_in_turn_then_says_exhausted() -> None:
    from claimfsm.skills.context import SkillContext

    skill = scripted_skill("s", [goto("B", x=1), fail("NOPE")])
    ctx = SkillContext(clock=FixedClock(), ids=SeqIds())
    first = skill.run({"st": {"sid": "S", "rev": 2, "fsm": "A"}, "anything": 1}, ctx)
    assert first.d == {"x": 1, "sp": {"rev": 3, "fsm": "B"}}
    assert skill.run({"st": {"sid": "S", "rev": 3, "fsm": "B"}}, ctx).e == fail("NOPE").e
    last = skill.run({"st": {"sid": "S", "rev": 3, "fsm": "B"}}, ctx)
    assert last.e is not None and last.e.code == "SCRIPT_EXHAUSTED"
    always = scripted_skill("s", Envelope.error("X", "x"))
    assert all(always.run({"st": ST}, ctx).e is not None for _ in range(3))


def test_scripted_driver_waits_out_retries_on_its_clock() -> None:
    clock = FixedClock()
    driver = scripted_driver(scripts={"PARSE_CLAIM": [goto("RETRIEVAL")],
                                      "RETRIEVAL": [retry("RATE_LIMITED"), goto("FAILED")]},
                             clock=clock)
    head = driver.run(driver.start("c").sid)
    assert head.fsm == "FAILED" and head.sid == "S1"
    assert clock.current > datetime(2026, 1, 1, tzinfo=UTC)  # advanced, not slept


def test_noop_session_is_a_consistent_record() -> None:
    record, machine, _ = noop_session(5)
    assert [s.after for s in record.steps] == ["WORK"] * 4 + ["DONE"]
    assert record.end is not None and record.end.rev == 5 and machine.name == "noop"


def test_toolkit_exports_are_public() -> None:
    import claimfsm.testing.toolkit as t

    missing: list[Any] = [n for n in t.__all__ if not hasattr(t, n)]
    assert missing == []
