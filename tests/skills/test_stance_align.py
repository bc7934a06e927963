"""Alignment checks of the stance judge (skills/stance/align.py, roles.py, causal.py):
each check on small pairs, and the judge's verdicts on the issue's three claims."""

from __future__ import annotations

import pytest

from claimfsm.skills.stance.align import CHECKS, quantifier_check, role_check
from claimfsm.skills.stance.causal import causal_check
from claimfsm.skills.stance.config import CALIBRATED_CONFIG
from claimfsm.skills.stance.features import analyze, claim_terms
from claimfsm.skills.stance.lexical import sentence_stance, title_terms
from claimfsm.skills.stance.names import argument_check, entity_check, together
from claimfsm.skills.stance.roles import frames

APOLLO = ("Neil Armstrong and Buzz Aldrin walked on the surface while Michael Collins "
          "stayed in orbit.")
BEARS = "Loss of sea ice caused by global warming threatens polar bear populations."


def key(claim: str) -> frozenset[str]:
    return frozenset(t.term for t in claim_terms(analyze(claim)))


def roles(claim: str, sentence: str) -> tuple[str, bool] | None:
    found = role_check(analyze(claim), analyze(sentence), key(claim))
    return None if found is None else (found.name, found.refutes)


def test_frames_find_agent_and_patient_with_voice() -> None:
    (f,) = frames(analyze("Polar bears cause the loss of sea ice."))
    assert [t.low for t in f.agent] == ["polar", "bears"]
    assert [t.low for t in f.patient] == ["loss", "sea", "ice"]
    # passive and reversing connectives put the agent after the verb
    (p,) = frames(analyze("Sea ice loss is caused by polar bears."))
    assert [t.low for t in p.agent] == ["polar", "bears"]
    (d,) = frames(analyze("Warming is due to CO2 emissions."))
    assert [t.low for t in d.agent] == ["co2", "emissions"]
    # two clauses, two frames; a comparison relates its two sides
    assert [f.word for f in frames(analyze(APOLLO))] == ["walked", "stayed"]
    (c,) = frames(analyze("K2 is higher than Mount Everest."))
    assert [t.low for t in c.patient] == ["mount", "everest"]


def test_a_swapped_role_is_caught_and_a_kept_one_passes() -> None:
    # agent replaced while the claim's agent stands elsewhere: blocks
    assert roles("Neil Armstrong stayed in orbit.", APOLLO) == ("role swapped", False)
    assert roles("Michael Collins stayed in orbit.", APOLLO) is None
    # the same verb with both sides exchanged: refutes
    assert roles("The Sun orbits the Earth.", "The Earth orbits the Sun.") == (
        "role swapped", True)
    assert roles("The Earth orbits the Sun.", "The Earth orbits the Sun.") is None
    # another verb of the cause/harm family, sides exchanged: blocks only
    assert roles("Polar bears cause the loss of sea ice.", BEARS) == ("role swapped", False)
    # the patient taken by something else while the claim's patient is elsewhere
    assert roles("Plants absorb oxygen and release carbon dioxide.",
                 "Plants absorb carbon dioxide and release oxygen.") is not None


def test_cause_and_effect() -> None:
    def check(claim: str, sentence: str) -> str | None:
        found = causal_check(analyze(claim), analyze(sentence), key(claim))
        return None if found is None else found[0]

    salt = "Salt is spread on icy roads because it lowers the freezing point of water."
    assert check("Roads are salted because salt lowers the freezing point of water.",
                 salt) is None
    assert check("Salt lowers the freezing point of water because it is spread on icy "
                 "roads.", salt) == "role swapped"
    assert check("Burning fossil fuels causes warming.", "Fossil fuels are burned.") == (
        "cause not confirmed")
    assert check("Fossil fuels are burned.", "Burning fossil fuels causes warming.") is None


def test_quantifiers() -> None:
    def check(claim: str, sentence: str) -> tuple[str, bool] | None:
        found = quantifier_check(analyze(claim), analyze(sentence))
        return None if found is None else (found.name, found.refutes)

    assert check("All glaciers are shrinking.", "Most glaciers are shrinking.") == (
        "quantifier differs", False)
    assert check("All glaciers are shrinking.", "Glaciers are shrinking.") == (
        "quantifier not confirmed", False)
    assert check("Every glacier is shrinking.", "All glaciers are shrinking.") is None
    assert check("Apollo 11 landed first.", "Apollo 11 landed last.") == (
        "quantifier differs", True)
    assert check("Twelve astronauts in all walked on the Moon.", "Twelve walked.") is None
    assert check("K2 is the highest mountain.", "K2 is the second highest mountain.") == (
        "quantifier differs", True)
    assert check("The Moon is one of several satellites of the Earth.",
                 "The Moon is the only natural satellite of the Earth.") == (
        "quantifier differs", True)


def test_entities_and_arguments_must_be_named() -> None:
    none = frozenset[str]()
    assert entity_check("The Nile flows into the Red Sea.",
                        analyze("The Nile flows into the Mediterranean Sea."), none)
    assert entity_check("CO2 traps heat.", analyze("Carbon dioxide traps heat."), none) is None
    # the speaker of a claim is not part of its fact
    assert entity_check("Dr Soon says the Sun drives warming.",
                        analyze("The Sun drives warming."), none) is None
    # the title of the sentence's document names what it is about
    assert entity_check("The Eiffel Tower opened in 1889.", analyze("It opened in 1889."),
                        title_terms("Eiffel Tower:3")) is None
    claim = "Polar bears cause the loss of sea ice."
    got = argument_check(analyze(claim), analyze("Arctic sea ice declined."), key(claim))
    assert got is not None and got.name == "argument not mentioned"
    # over several supporting sentences together, each may name a part
    assert together("Armstrong walked on the Moon in July.",
                    [("Armstrong walked on the surface.", frozenset()),
                     ("The Moon landing was in July.", frozenset())]) is None


@pytest.mark.parametrize(("claim", "check"), [
    ("Canberra became the capital of Australia in 1850.", "number not confirmed"),
    ("Neil Armstrong stayed in orbit while Michael Collins walked on the Moon.",
     "role swapped"),
    ("Polar bears cause the loss of sea ice.", "role swapped"),
])
def test_the_issues_claims_are_not_supported_by_their_sentences(claim: str,
                                                                check: str) -> None:
    sentences = {"Canberra": "Canberra is the capital of Australia.", "Neil": APOLLO,
                 "Polar": BEARS}
    st = sentence_stance(claim, sentences[claim.split()[0]], CALIBRATED_CONFIG)
    assert st.label != "SUPPORTS"
    assert any(r.startswith(check + ":") for r in st.reasons), st.reasons


def test_every_check_name_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "judge.md").read_text()
    assert CHECKS and all(f"`{name}`" in doc for name in CHECKS)


def test_the_issues_table_on_the_demo_store() -> None:
    # The three claims issue 29 found SUPPORTS on `make demo`'s store, through the engine
    # with the default profile: none is SUPPORTS, and each verdict names its check.
    from datetime import UTC, datetime

    from claimfsm import Engine, EngineConfig
    from claimfsm.skills.context import FixedClock
    from claimfsm.skills.verdict_aggregate import Verdict, warnings

    expected = {
        "Canberra became the capital of Australia in 1850.": "number not confirmed",
        "Neil Armstrong stayed in orbit while Michael Collins walked on the Moon.":
            "role swapped",
        "Polar bears cause the loss of sea ice.": "role swapped",
    }
    config = EngineConfig(clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    with Engine.open(None, config=config) as engine:
        for claim, check in expected.items():
            head = engine.driver.run(engine.start(claim).sid)
            verdict = Verdict.model_validate(head.state.verdict)
            assert verdict.label != "SUPPORTS", claim
            assert check in [w[1] for w in warnings(verdict)], verdict.reasons


def test_align_answers_a_pair_it_has_seen_from_memory_and_only_that_pair() -> None:
    from claimfsm.skills.stance import align as mod
    from claimfsm.skills.stance.features import Analysis

    claim = "Polar bears cause the loss of sea ice."
    ca, sa = analyze(claim), analyze(BEARS)
    first = mod.align(claim, ca, sa, key(claim))
    assert first and first == mod._align(ca, sa, key(claim))
    assert mod.align(claim, ca, sa, key(claim)) is first  # the same pair: remembered
    # Equal analyses that are other objects are aligned anew, to the same answer; a
    # different sentence never gets the remembered one.
    copy = Analysis(tokens=sa.tokens, numbers=sa.numbers)
    again = mod.align(claim, ca, copy, key(claim))
    assert again == first and again is not first
    other = analyze("Sea ice loss is caused by polar bears.")
    assert mod.align(claim, ca, other, key(claim)) == mod._align(ca, other, key(claim)) != first
