"""stance_judge (VERIFY): per-subclaim verdicts with citations, as an envelope."""

from __future__ import annotations

from typing import Any

from claimfsm.skills.context import SkillContext
from claimfsm.skills.stance_judge import SKILL, handler
from tests.skills.test_skill_evidence_extract import card_example

ST = {"sid": "A1", "rev": 9, "fsm": "VERIFY"}


def _ev(eid: str, text: str, score: float = 1.0) -> dict[str, Any]:
    return {"id": eid, "doc_id": eid.split("#")[0], "text": text, "source": "wiki",
            "score": score}


CLAIMS = [{"id": "s1", "c": "NASA landed on the Moon in 1969."},
          {"id": "s2", "c": "Apollo 13 landed on the Moon."},
          {"id": "s3", "c": "Honey never spoils."}]
EVIDENCE = {
    "s1": [_ev("a#0", "NASA landed two astronauts on the Moon in July 1969."),
           _ev("a#1", "The crew returned to Earth four days later.")],
    "s2": [_ev("b#2", "Apollo 13 never landed on the Moon."),
           _ev("c#0", "Apollo 11 landed on the Moon in 1969.")],
}


def _run(**over: Any) -> Any:
    inp: dict[str, Any] = {"claims": CLAIMS, "evidence": EVIDENCE, "st": ST}
    inp.update(over)
    return SKILL.run(inp, SkillContext())


def test_judges_every_subclaim_in_order_and_moves_to_aggregate() -> None:
    env = _run()
    assert env.s == "ok" and env.sp is not None
    assert (env.sp.rev, env.sp.fsm) == (10, "AGGREGATE")
    js = env.data["judgments"]
    assert [j["id"] for j in js] == ["s1", "s2", "s3"]
    assert [j["verdict"] for j in js] == ["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"]
    assert list(js[0]) == ["id", "verdict", "confidence", "cites", "reasons", "stances"]


def test_supports_cites_the_sentence_and_explains() -> None:
    j = _run().data["judgments"][0]
    assert j["cites"] == ["a#0"]
    assert any("numbers agree: 1969" in r for r in j["reasons"])
    assert j["stances"][0] == {"id": "a#0", "label": "SUPPORTS", "score": 1.0}
    assert j["stances"][1]["label"] == "NOT_ENOUGH_INFO"
    assert 0.0 < j["confidence"] <= 1.0


def test_refutes_on_negation_and_ignores_the_other_mission() -> None:
    j = _run().data["judgments"][1]
    assert j["cites"] == ["b#2"]
    assert any("negation: sentence denies 'landed'" in r for r in j["reasons"])
    assert [s["label"] for s in j["stances"]] == ["REFUTES", "NOT_ENOUGH_INFO"]


def test_no_evidence_is_not_enough_info() -> None:
    j = _run().data["judgments"][2]
    assert j == {"id": "s3", "verdict": "NOT_ENOUGH_INFO", "confidence": 1.0, "cites": [],
                 "reasons": ["no evidence"], "stances": []}


def test_wrong_year_refutes() -> None:
    env = _run(claims=[{"id": "s1", "c": "NASA landed on the Moon in 1972."}])
    j = env.data["judgments"][0]
    assert j["verdict"] == "REFUTES"
    assert any("numbers clash: 1972 vs 1969" in r for r in j["reasons"])


def test_irrelevant_evidence_is_not_enough_info() -> None:
    ev = {"s1": [_ev("x#0", "Mars has two small moons."), _ev("x#1", "Penguins swim.")]}
    j = _run(claims=[CLAIMS[0]], evidence=ev).data["judgments"][0]
    assert j["verdict"] == "NOT_ENOUGH_INFO" and j["cites"] == []


def test_evidence_both_ways_is_not_enough_info() -> None:
    ev = {"s1": [_ev("p#0", "NASA landed on the Moon in 1969."),
                 _ev("q#0", "NASA never landed on the Moon in 1969.")]}
    j = _run(claims=[CLAIMS[0]], evidence=ev).data["judgments"][0]
    assert j["verdict"] == "NOT_ENOUGH_INFO"
    assert set(j["cites"]) == {"p#0", "q#0"}
    assert any("both ways" in r for r in j["reasons"])


def test_evidence_for_unknown_subclaims_is_ignored() -> None:
    env = _run(evidence={**EVIDENCE, "zz": [_ev("z#0", "whatever")]})
    assert [j["id"] for j in env.data["judgments"]] == ["s1", "s2", "s3"]


def test_error_codes() -> None:
    env = _run(claims=[])
    assert (env.s, env.e and env.e.code, env.rb) == ("error", "NO_CLAIMS", "state")
    env = _run(claims=[CLAIMS[0], CLAIMS[0]])
    assert env.e is not None and env.e.code == "DUPLICATE_CLAIM" and "s1" in env.e.msg
    env = _run(evidence={"s1": [{"id": "a#0"}]})
    assert env.e is not None and env.e.code == "BAD_INPUT" and "evidence.s1.0" in env.e.msg
    env = _run(st={"sid": "A1"})
    assert env.e is not None and env.e.code == "BAD_INPUT" and "st.rev" in env.e.msg


def test_same_input_gives_identical_bytes() -> None:
    assert _run().to_json() == _run().to_json()


def test_skill_metadata() -> None:
    assert SKILL.name == "stance_judge" and SKILL.handler is handler
    assert SKILL.rb_on_error == "state"


def test_card_example_is_what_the_skill_answers() -> None:
    raw_in, raw_out = card_example("stance_judge")
    assert SKILL.run(raw_in, SkillContext()).to_json().decode() == raw_out


def test_profile_picks_the_calibrated_thresholds() -> None:
    claims = [{"id": "s1", "c": "The Arctic sea ice cover has declined sharply since 1979."}]
    evidence = {"s1": [_ev("x#0", "Arctic ice extent has declined since 1979.")]}
    default = _run(claims=claims, evidence=evidence).data["judgments"][0]
    calibrated = _run(claims=claims, evidence=evidence,
                      profile="calibrated").data["judgments"][0]
    assert default["verdict"] == "NOT_ENOUGH_INFO"
    assert calibrated["verdict"] == "SUPPORTS" and calibrated["cites"] == ["x#0"]
    # without the year, no threshold set supports it: the number is not confirmed
    bare = {"s1": [_ev("x#0", "Arctic ice extent has declined.")]}
    for profile in ("default", "calibrated"):
        j = _run(claims=claims, evidence=bare, profile=profile).data["judgments"][0]
        assert j["verdict"] == "NOT_ENOUGH_INFO"
    j = _run(claims=claims, evidence=bare, profile="calibrated").data["judgments"][0]
    assert "check x#0: number not confirmed: 1979" in j["reasons"]


def test_unknown_profile_is_bad_input_naming_the_field() -> None:
    env = _run(profile="lenient")
    assert env.s == "error" and env.e is not None and env.e.code == "BAD_INPUT"
    assert env.e.msg.startswith("profile:")
