"""The alignment checks' refinements of 2026-11-26 (docs/judge.md, "Figures (2026-11-26):
names, time spans, judgments"): each frees a sentence that states the claim's fact, and
each still blocks the case the check is for."""

from __future__ import annotations

from claimfsm.skills.stance.align import CHECKS, judgment_check, quantifier_check
from claimfsm.skills.stance.config import CALIBRATED_CONFIG
from claimfsm.skills.stance.features import analyze, claim_terms
from claimfsm.skills.stance.lexical import sentence_stance
from claimfsm.skills.stance.names import (
    acronyms,
    argument_check,
    entity_check,
    initials,
    together,
)

NONE = frozenset[str]()


def key(claim: str) -> frozenset[str]:
    return frozenset(t.term for t in claim_terms(analyze(claim)))


def test_a_headlines_capitals_are_not_names_but_its_acronyms_are() -> None:
    headline = "Discovery Of Massive Volcanic CO2 Emissions Discredits Global Warming Theory"
    sentence = analyze("Volcanic carbon dioxide emissions were massive.")
    assert entity_check(headline, sentence, NONE) is None
    # the acronym still counts: a sentence without CO2 (or carbon dioxide) misses it
    missing = entity_check(headline, analyze("Volcanic emissions were massive."), NONE)
    assert missing is not None and "CO2" in missing.detail
    # names capitalise their own words only: no small word in capitals, no headline
    got = entity_check("Neil Armstrong and Michael Collins walked on the Moon",
                       analyze("Neil Armstrong and Michael Collins walked."), NONE)
    assert got is not None and "Moon" in got.detail


def test_a_speaker_before_a_colon_or_a_reporting_verb_is_not_an_entity() -> None:
    sentence = analyze("Humans are warming the planet by burning fossil fuels.")
    assert entity_check("[Jonathan Overpeck:] humans are warming the planet", sentence,
                        NONE) is None
    assert entity_check("Murry Salby finds humans are warming the planet", sentence,
                        NONE) is None
    # the same name as the one who acts is an entity of the fact
    assert entity_check("Jonathan Overpeck is warming the planet", sentence, NONE) is not None


def test_an_acronym_is_named_by_its_spelled_out_words() -> None:
    wanted = acronyms("The IPCC and the UN agree on the MWP.")
    assert wanted == {"ipc", "un", "mwp"}
    assert initials("Intergovernmental Panel on Climate Change", wanted) == {"ipc"}
    assert initials("The Medieval Warm Period was warm", wanted) == {"mwp"}
    assert initials("the United Nations said", wanted) == {"un"}
    # only the claim's acronyms are spelled: nothing else leaks in as a term
    assert initials("Neil Armstrong and Buzz Aldrin", wanted) == frozenset()
    claim = "The IPCC assesses climate science."
    assert together(claim, [("A panel assesses climate science.", frozenset())]) is not None
    assert together(claim, [("The Intergovernmental Panel on Climate Change assesses "
                             "climate science.", frozenset())]) is None


def test_co2_is_named_by_the_greenhouse_gases_it_belongs_to() -> None:
    claim = "CO2 amplifies warming."
    assert entity_check(claim, analyze("Greenhouse gases amplify warming."), NONE) is None
    assert entity_check(claim, analyze("Water vapour amplifies warming."), NONE) is not None


def test_an_agent_that_reports_needs_no_mention() -> None:
    claim = "Scientists published evidence that heat waves grow more frequent."
    got = argument_check(analyze(claim), analyze("Heat waves grow more frequent."),
                         key(claim))
    assert got is None
    claim = "Polar bears cause the loss of sea ice."
    got = argument_check(analyze(claim), analyze("Arctic sea ice declined."), key(claim))
    assert got is not None and got.name == "argument not mentioned"


def test_last_and_first_before_a_span_of_time_are_no_rank() -> None:
    sent = analyze("Global sea level rose about 8 inches over the twentieth century.")
    for claim in ("Global sea level rose about 8 inches in the last century.",
                  "Sea level rose in the past 100 years.",
                  "Sea level rose over the last two centuries."):
        assert quantifier_check(analyze(claim), sent) is None, claim
    got = quantifier_check(analyze("Apollo 17 was the last crewed landing."),
                           analyze("Apollo 17 was a crewed landing."))
    assert got is not None and got.name == "quantifier not confirmed"


def test_a_claim_that_judges_a_fact_is_not_supported_by_the_fact() -> None:
    assert "judgment not confirmed" in CHECKS
    claim = "Sea level rise due to global warming is exaggerated."
    sentence = "Global warming causes sea level rise."
    got = judgment_check(analyze(claim), analyze(sentence))
    assert got is not None and got.name == "judgment not confirmed" and not got.refutes
    st = sentence_stance(claim, sentence, CALIBRATED_CONFIG)
    assert st.label != "SUPPORTS"
    assert any(r.startswith("judgment not confirmed:") for r in st.reasons), st.reasons
    # a sentence making the same judgment passes the check
    assert judgment_check(analyze(claim), analyze(
        "Claims of sea level rise were exaggerated.")) is None
