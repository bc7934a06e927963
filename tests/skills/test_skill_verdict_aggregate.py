"""verdict_aggregate (AGGREGATE): the aggregation table, errors, and the demo corpus end
to end (evidence_extract -> stance_judge -> verdict_aggregate over fixtures/)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from claimfsm.skills import evidence_extract, stance_judge
from claimfsm.skills.context import SkillContext
from claimfsm.skills.verdict_aggregate import SKILL, handler
from tests.skills.test_skill_evidence_extract import (
    FIXTURES,
    FakeTools,
    card_example,
    kb_facts,
    keyword_hits,
    load_demo,
)

ST = {"sid": "A1", "rev": 11, "fsm": "AGGREGATE"}
S, R, N = "SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"


def _j(sid: str, verdict: str, cites: tuple[str, ...] = (), stances: Any = ()) -> dict[str, Any]:
    return {"id": sid, "verdict": verdict, "confidence": 0.8, "cites": list(cites),
            "reasons": [f"{sid} because"], "stances": list(stances)}


def _run(judgments: list[dict[str, Any]], claims: list[dict[str, str]] | None = None) -> Any:
    if claims is None:
        claims = [{"id": j["id"], "c": f"claim {j['id']}"} for j in judgments]
    return SKILL.run({"claims": claims, "judgments": judgments, "st": ST}, SkillContext())


@pytest.mark.parametrize(("verdicts", "label"), [
    ((S,), S),
    ((S, S), S),
    ((R,), R),
    ((R, N), R),
    ((R, R), R),
    ((N,), N),
    ((N, N), N),
    ((S, N), N),
    ((S, R), "DISPUTED"),
    ((S, R, N), "DISPUTED"),
])
def test_aggregation_table(verdicts: tuple[str, ...], label: str) -> None:
    env = _run([_j(f"s{n}", v) for n, v in enumerate(verdicts, 1)])
    assert env.s == "ok" and env.data["verdict"]["label"] == label


def test_a_subclaim_torn_both_ways_makes_the_claim_disputed() -> None:
    torn = [{"id": "a", "label": S, "score": 0.8}, {"id": "b", "label": R, "score": 0.78}]
    env = _run([_j("s1", N, ("a", "b"), torn)])
    v = env.data["verdict"]
    assert v["label"] == "DISPUTED"
    assert v["reasons"][0] == "evidence strongly goes both ways for s1"
    lopsided = [{"id": "a", "label": S, "score": 0.95}, {"id": "b", "label": R, "score": 0.7}]
    assert _run([_j("s1", S, ("a",), lopsided)]).data["verdict"]["label"] == S


def test_reasons_and_cites_follow_claim_order_without_duplicates() -> None:
    claims = [{"id": "s1", "c": "x"}, {"id": "s2", "c": "y"}]
    env = _run([_j("s2", S, ("d#1", "d#2")), _j("s1", S, ("d#2", "k1"))], claims)
    v = env.data["verdict"]
    assert v["cites"] == ["d#2", "k1", "d#1"]
    assert v["reasons"] == ["every subclaim is supported",
                            "s1: SUPPORTS (0.80): s1 because", "s2: SUPPORTS (0.80): s2 because"]
    assert env.sp is not None and (env.sp.rev, env.sp.fsm) == (12, "DONE")
    assert list(env.d or {}) == ["verdict", "sp"]


def test_an_unjudged_subclaim_counts_as_not_enough_info() -> None:
    claims = [{"id": "s1", "c": "x"}, {"id": "s2", "c": "y"}]
    v = _run([_j("s1", S)], claims).data["verdict"]
    assert v["label"] == N
    assert v["reasons"][0] == "only part of the claim is supported"
    assert "s2: NOT_ENOUGH_INFO (1.00): not judged" in v["reasons"]


def test_error_codes() -> None:
    env = _run([])
    assert (env.s, env.e and env.e.code, env.rb) == ("error", "NO_JUDGMENTS", "state")
    assert env.e is not None and "judgments" in env.e.msg
    env = _run([_j("s9", S)], [{"id": "s1", "c": "x"}])
    assert env.e is not None and env.e.code == "UNKNOWN_CLAIM" and "judgments.0.id" in env.e.msg
    env = _run([_j("s1", S), _j("s1", R)])
    assert env.e is not None and env.e.code == "DUPLICATE_JUDGMENT"
    env = _run([_j("s1", "MAYBE")])
    assert env.e is not None and env.e.code == "BAD_INPUT" and "judgments.0.verdict" in env.e.msg


def test_same_input_gives_identical_bytes() -> None:
    js = [_j("s1", S, ("a",)), _j("s2", R, ("b",))]
    assert _run(js).to_json() == _run(js).to_json()


def test_skill_metadata() -> None:
    assert SKILL.name == "verdict_aggregate" and SKILL.handler is handler
    assert SKILL.rb_on_error == "state"


# --- the demo corpus, end to end --------------------------------------------------------

DEMO_CLAIMS = json.loads((FIXTURES / "demo_claims.json").read_text())


def _verify(claim: str) -> tuple[Any, Any, Any]:
    docs, kb = load_demo()
    claims = [{"id": "s1", "c": claim}]
    st = {"sid": "demo", "rev": 3, "fsm": "EXTRACT"}
    extracted = evidence_extract.SKILL.run(
        {"claims": claims, "hits": keyword_hits("s1", claim, docs),
         "facts": kb_facts("s1", claim, kb), "round": 1, "st": st},
        SkillContext(tools=FakeTools(docs)))
    assert extracted.s == "ok", extracted.e
    judged = stance_judge.SKILL.run(
        {"claims": claims, "evidence": extracted.data["evidence"],
         "st": {**st, "rev": 4, "fsm": "VERIFY"}}, SkillContext())
    assert judged.s == "ok", judged.e
    verdict = SKILL.run(
        {"claims": claims, "judgments": judged.data["judgments"],
         "st": {**st, "rev": 5, "fsm": "AGGREGATE"}}, SkillContext())
    assert verdict.s == "ok", verdict.e
    return extracted, judged, verdict


def test_demo_fixtures_are_well_formed() -> None:
    docs, kb = load_demo()
    assert 30 <= len(docs) <= 60 and 20 <= len(kb) <= 40
    assert {d["source"] for d in docs.values()} == {"wiki", "web", "news"}
    assert all(f["source"] == "kb" for f in kb)
    assert {c["expected"] for c in DEMO_CLAIMS} >= {S, R, N}


@pytest.mark.parametrize("case", DEMO_CLAIMS, ids=[c["claim"] for c in DEMO_CLAIMS])
def test_demo_claims_get_their_expected_verdict(case: dict[str, str]) -> None:
    _, judged, verdict = _verify(case["claim"])
    v = verdict.data["verdict"]
    assert v["label"] == case["expected"], judged.data["judgments"]
    if v["label"] in (S, R):
        # a verdict rests on cited evidence that was actually extracted
        assert v["cites"]
        assert set(v["cites"]) <= set(judged.data["judgments"][0]["cites"])


def test_demo_run_is_deterministic() -> None:
    claim = DEMO_CLAIMS[0]["claim"]
    first = [e.to_json() for e in _verify(claim)]
    assert first == [e.to_json() for e in _verify(claim)]


def test_subclaim_lines_use_the_most_specific_reason() -> None:
    j = _j("s1", R, ("d#1",))
    j["reasons"] = ["2 sentences: 0 clearly support, 1 clearly refute",
                    "d#1: key terms 3/3; numbers clash: 1972 vs 1969"]
    v = _run([j]).data["verdict"]
    assert v["reasons"] == ["a subclaim is refuted and none is supported",
                            "s1: REFUTES (0.80): d#1: key terms 3/3; numbers clash: 1972 vs 1969"]


def test_card_example_is_what_the_skill_answers() -> None:
    raw_in, raw_out = card_example("verdict_aggregate")
    assert SKILL.run(raw_in, SkillContext()).to_json().decode() == raw_out


def test_profile_picks_the_dispute_thresholds() -> None:
    torn = [_j("s1", N, stances=[{"id": "a", "label": S, "score": 0.66},
                                 {"id": "b", "label": R, "score": 0.72}])]
    claims = [{"id": "s1", "c": "claim s1"}]
    default = SKILL.run({"claims": claims, "judgments": torn, "st": ST}, SkillContext())
    calibrated = SKILL.run({"claims": claims, "judgments": torn, "profile": "calibrated",
                            "st": ST}, SkillContext())
    assert default.data["verdict"]["label"] == N
    assert calibrated.data["verdict"]["label"] == "DISPUTED"


def test_a_blocked_subclaim_names_its_check_as_a_warning() -> None:
    from claimfsm.skills.evidence_extract import Claim, EvidenceItem
    from claimfsm.skills.stance.config import THRESHOLDS
    from claimfsm.skills.stance_judge import judge
    from claimfsm.skills.verdict_aggregate import Verdict, aggregate, warnings

    claim = Claim(id="s1", c="Canberra became the capital of Australia in 1850.")
    ev = [EvidenceItem(id="australia#1", doc_id="australia", source="wiki", score=1.0,
                       text="Canberra is the capital of Australia.")]
    j = judge(claim, ev, THRESHOLDS["calibrated"])
    assert j.verdict == "NOT_ENOUGH_INFO"
    v = aggregate([claim], [j], THRESHOLDS["calibrated"])
    assert v.label == "NOT_ENOUGH_INFO"
    assert "warning: s1: number not confirmed: 1850 [australia#1]" in v.reasons
    assert warnings(v) == [("s1", "number not confirmed", "1850", "australia#1")]
    # a supported claim carries none, and only warning lines parse
    assert warnings(Verdict(label="SUPPORTS", reasons=["s1: SUPPORTS"], cites=[])) == []
