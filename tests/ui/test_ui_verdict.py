"""The verdict card and the timeline in plain words, without a browser: the judge's doubts
whatever the label, each sentence's stance and relevance, the relevance floor, the
engine's terms kept behind the toggle, tool calls grouped, and why Step/Run are off."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.state.model import Revision, new_state
from claimfsm.ui.pages import blocked
from claimfsm.ui.timeline import duration_text, timeline, tool_groups
from claimfsm.ui.verdict import RELEVANCE_FLOOR, doubts, verdict_panel
from claimfsm.ui.wording import reason_words


def _head(fsm: str = "DONE", **state: Any) -> Revision:
    st = new_state("sid1", "Canberra became the capital of Australia in 1850.", fsm, {}, {})
    return Revision(sid="sid1", rev=3, parent_rev=2, fsm=fsm, skill="verdict_aggregate",
                    envelope={"s": "ok", "d": {}, "e": None, "rb": "none"},
                    state=st.model_copy(update=state), ts="2026-11-25T10:00:00+00:00")


EVIDENCE = {"s1": [
    {"id": "australia#1", "doc_id": "australia", "text": "Canberra is the capital of Australia.",
     "source": "wiki", "score": 0.8},
    {"id": "voyager#2", "doc_id": "voyager", "text": "Voyager 1 left in 1977.",
     "source": "wiki", "score": 0.2},
]}
SUBCLAIMS = [{"id": "s1", "c": "Canberra became the capital of Australia in 1850."}]


def test_a_supported_verdict_still_shows_the_doubt_its_judgment_recorded() -> None:
    # The verdict's reasons carry warnings only when it is not SUPPORTS; the judgment's
    # deciding check is a doubt all the same.
    judgment = {"id": "s1", "verdict": "SUPPORTS", "confidence": 0.64, "cites": ["australia#1"],
                "reasons": ["2 sentences", "check australia#1: number not confirmed: 1850"],
                "stances": [{"id": "australia#1", "label": "SUPPORTS", "score": 0.64},
                            {"id": "voyager#2", "label": "NOT_ENOUGH_INFO", "score": 0.9}]}
    head = _head(subclaims=SUBCLAIMS, evidence=EVIDENCE, judgments=[judgment],
                 verdict={"label": "SUPPORTS", "reasons": [
                     "every subclaim is supported",
                     "s1: SUPPORTS (0.64): australia#1: key terms 3/3"], "cites": ["australia#1"]})
    assert doubts(head) == [("s1", "number not confirmed", "1850", "australia#1")]
    html = verdict_panel(head)
    assert 'id="warnings"' in html and "⚠ with doubts" in html
    visible = html.split('id="engine-terms"')[0]
    assert "stance: supports 0.64" in visible and "relevance 0.80" in visible
    assert escape("part s1 supports (confidence 0.64): australia#1: names 3 of the claim's 3 "
                  "key terms") in visible
    assert "key terms 3/3" not in visible
    folded = visible.split('class="below-floor"')[1]
    assert "Voyager 1 left in 1977." in folded and f"({RELEVANCE_FLOOR:.2f})" in folded
    assert "Voyager" not in visible.split('class="below-floor"')[0]


def test_the_verdicts_own_warnings_and_no_doubt_when_there_is_none() -> None:
    head = _head(verdict={"label": "NOT_ENOUGH_INFO", "reasons": [
        "no subclaim is clearly supported or refuted",
        "warning: s1: entity not mentioned: 'Sydney' [australia#1]"], "cites": []})
    assert doubts(head) == [("s1", "entity not mentioned", "'Sydney'", "australia#1")]
    html = verdict_panel(head)
    assert "a name in the claim is missing from the evidence: &#x27;Sydney&#x27;" in html
    assert 'id="warnings"' not in verdict_panel(_head(verdict={
        "label": "REFUTES", "reasons": ["a subclaim is refuted"], "cites": []}))


def test_reasons_in_plain_words() -> None:
    assert reason_words("s2: NOT_ENOUGH_INFO (1.00): no evidence") == \
        "part s2 not enough info (confidence 1.00): no evidence"
    assert reason_words("every subclaim is supported") == "every subclaim is supported"


def test_tool_calls_grouped_with_durations() -> None:
    calls = ([{"type": "ToolInvoked", "tool": "page_fetch", "ok": True, "duration_ms": ms}
              for ms in (0, 3, 0)]
             + [{"type": "ToolInvoked", "tool": "sentence_extract", "ok": False,
                 "code": "TIMEOUT", "duration_ms": 0}])
    rev = _head("VERIFY").model_copy(update={"events": calls})
    groups = tool_groups(rev)
    assert [(g["tool"], g["calls"], g["ms"], g["failed"]) for g in groups] == [
        ("page_fetch", 3, 3, []), ("sentence_extract", 1, 0, ["TIMEOUT"])]
    html = timeline([rev], actions=False)
    assert "page_fetch ×3 · 3 ms ✓" in html and "✗ 1 failed (TIMEOUT)" in html
    assert 'title="each call: &lt;1 ms, 3 ms, &lt;1 ms"' in html
    assert re.search(r'<time datetime="2026-11-25T10:00:00\+00:00" title="[^"]+">'
                     r"2026-11-25 10:00:00</time>", html)
    assert [duration_text(x) for x in (0.4, 38, 1200, 125_000)] == [
        "0.4 ms", "38 ms", "1.2 s", "2 min 5 s"]


def test_why_step_and_run_are_off() -> None:
    assert blocked(DEFAULT_MACHINE, _head("RETRIEVAL")) is None
    assert "DONE: nothing is left to run" in (blocked(DEFAULT_MACHINE, _head("DONE")) or "")
    assert "reopening" in (blocked(DEFAULT_MACHINE, _head("FAILED")) or "")


def test_step_and_run_are_off_while_a_session_waits(tmp_path: Any) -> None:
    from claimfsm.engine.profile import resolve_profile
    from claimfsm.engine.runtime import Engine

    with Engine.open(str(tmp_path / "w.db")) as eng:
        sid = eng.start("Sydney is the capital of Australia.",
                        profile=resolve_profile({"review": "always"})).sid
        head = eng.driver.run(sid)
    assert head.fsm == "REVIEW"
    assert "waits for input (ReviewInput) in REVIEW" in (blocked(DEFAULT_MACHINE, head) or "")
