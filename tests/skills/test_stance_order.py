"""The one-way-word and rounding checks of the stance judge (skills/stance/order.py,
numbers.py): each on small pairs that hold for any claim of that shape, and the judge's
stance on a pair with the check deciding."""

from __future__ import annotations

import pytest

from claimfsm.skills.stance.config import CALIBRATED_CONFIG
from claimfsm.skills.stance.features import analyze, claim_terms
from claimfsm.skills.stance.lexical import sentence_stance
from claimfsm.skills.stance.numbers import compare_numbers, find_numbers
from claimfsm.skills.stance.order import order_check


def key(claim: str) -> frozenset[str]:
    return frozenset(t.term for t in claim_terms(analyze(claim)))


def order(claim: str, sentence: str) -> str | None:
    found = order_check(analyze(claim), analyze(sentence), key(claim))
    return None if found is None else found[0]


@pytest.mark.parametrize(("claim", "sentence"), [
    ("Factories turn raw cotton into cloth.", "Factories turn cloth into raw cotton."),
    ("Lake Ohrid is bigger than Lake Prespa.", "Lake Prespa is bigger than Lake Ohrid."),
    ("Lake Ohrid is bigger than Lake Prespa.", "Lake Prespa is bigger, but shallower."),
    ("Toledo was picked as a compromise between Madrid and Seville.",
     "Madrid was picked as a compromise between Toledo and Seville."),
    ("Phobos circles around Deimos every day.", "Deimos orbits Phobos every day."),
    ("The county lies within the town of Ashby.", "Ashby is a town in the county."),
    ("Salt on Vega is one third of the salt on Rigel.",
     "Salt on Rigel is one third of the salt on Vega."),
])
def test_a_one_way_word_read_the_other_way_round_is_a_swap(claim: str,
                                                          sentence: str) -> None:
    assert order(claim, sentence) == "role swapped"


@pytest.mark.parametrize(("claim", "sentence"), [
    # same sides, however the rest of the sentence reads
    ("Factories turn raw cotton into cloth.", "In mills, raw cotton is turned into cloth."),
    ("Lake Ohrid is bigger than Lake Prespa.", "Lake Ohrid is much bigger than Lake Prespa."),
    # the antonym with the sides swapped says the same thing
    ("Lake Ohrid is bigger than Lake Prespa.", "Lake Prespa is smaller than Lake Ohrid."),
    # "more than" a number compares no two things
    ("More than 300 people live in Ashby.", "Ashby has more than 300 people."),
    # no one-way word in the claim
    ("Ashby is a town in the county.", "The county lies within the town of Ashby."),
])
def test_a_one_way_word_kept_or_absent_passes(claim: str, sentence: str) -> None:
    assert order(claim, sentence) is None


def test_the_judge_does_not_support_a_swapped_comparison() -> None:
    st = sentence_stance("Lake Ohrid is bigger than Lake Prespa.",
                         "Lake Prespa is bigger than Lake Ohrid.", CALIBRATED_CONFIG)
    assert st.label == "NOT_ENOUGH_INFO"
    assert any(r.startswith("role swapped: ") for r in st.reasons), st.reasons


@pytest.mark.parametrize(("claim", "sentence", "agrees"), [
    ("every 360 days", "every 365.25 days", False),
    ("every 365 days", "every 365.25 days", True),
    ("about 8,800 metres", "about 8,849 metres", True),
    ("about 8,850 metres", "about 8,849 metres", True),
    ("1,500 metres", "1,520 metres", True),
    # within the 2% tolerance, but "1,010" is not 1,016 rounded to tens
    ("1,010 metres", "1,016 metres", False),
    ("97% of scientists", "97.1% of scientists", True),
    ("1,000 metres", "1,010 metres", True),
    ("1,020 metres", "1,010 metres", False),
    # a number not written round keeps the plain 2% tolerance
    ("195 countries", "196 countries", True),
    ("1.55 degrees", "1.52 degrees", True),
])
def test_a_number_agrees_only_as_written_precision_allows(claim: str, sentence: str,
                                                          agrees: bool) -> None:
    check = compare_numbers(find_numbers(claim), find_numbers(sentence), 0.02)
    assert bool(check.agree) is agrees, check
