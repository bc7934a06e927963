"""PARSE_CLAIM: conservative splitting, shared planning, failures, properties."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimfsm.skills import evidence_query_plan
from claimfsm.skills.analysis.split import split_claim
from claimfsm.skills.analysis.text import tokens
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_query_plan import MAX_TOKENS, query_tokens
from claimfsm.skills.parse_claim import SKILL, subclaims

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ST = {"sid": "A1", "rev": 0, "fsm": "PARSE_CLAIM"}


def ctx() -> SkillContext:
    return SkillContext(clock=FixedClock(current=NOW))


def run(claim: str, hints: list[str] | None = None) -> Envelope:
    return SKILL.run({"claim": claim, "st": ST, "hints": hints}, ctx())


def ok(claim: str) -> dict[str, Any]:
    env = run(claim)
    assert env.s == "ok", env.e
    assert env.d is not None
    return env.d


# -- output shape and shared planning -------------------------------------------------


def test_single_fact_claim_is_one_subclaim_with_the_seed_plan() -> None:
    d = ok("NASA landed on the Moon in 1969.")
    assert list(d) == ["claims", "plans", "sp"]
    assert d["claims"] == [{"id": "s1", "c": "NASA landed on the Moon in 1969."}]
    assert d["plans"] == [
        {"id": "s1", "q": ["NASA Moon landing 1969"], "src": ["wiki", "web"], "lim": 4}
    ]
    assert d["sp"] == {"rev": 1, "fsm": "RETRIEVAL"}


def test_plans_are_exactly_what_the_planner_gives_for_the_subclaims() -> None:
    d = ok("Albert Einstein was born in 1879 and won the Nobel Prize in 1921.")
    planned = evidence_query_plan.SKILL.run({"claims": d["claims"], "st": ST}, ctx())
    assert planned.d is not None
    assert planned.d["plans"] == d["plans"]
    assert [p["id"] for p in d["plans"]] == [c["id"] for c in d["claims"]]


def test_identical_input_gives_identical_bytes() -> None:
    claim = "Paris is in France and Berlin is in Germany."
    assert run(claim).to_json() == run(claim).to_json()


def test_whitespace_is_normalised_in_an_unsplit_claim() -> None:
    assert ok("  NASA  landed on\tthe Moon.  ")["claims"][0]["c"] == "NASA landed on the Moon."


# -- splitting: positive cases --------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "parts"),
    [
        ("Albert Einstein was born in 1879 and won the Nobel Prize in 1921.",
         ["Albert Einstein was born in 1879", "Albert Einstein won the Nobel Prize in 1921"]),
        ("Paris is the capital of France; Berlin is the capital of Germany.",
         ["Paris is the capital of France", "Berlin is the capital of Germany"]),
        ("Paris is in France and Berlin is in Germany.",
         ["Paris is in France", "Berlin is in Germany"]),
        ("The U.S. Army was founded in 1775. It is the oldest branch of the military.",
         ["The U.S. Army was founded in 1775",
          "The U.S. Army is the oldest branch of the military"]),
        ("Climate change is real and it is caused by humans.",
         ["Climate change is real", "Climate change is caused by humans"]),
        ("She was born in Paris and raised in London.",
         ["She was born in Paris", "She was raised in London"]),
        ("He was born in 1950 and died in 2000.", ["He was born in 1950", "He died in 2000"]),
        ("Dr. Smith won the award in 1990, and he retired in 2000.",
         ["Dr. Smith won the award in 1990", "Dr. Smith retired in 2000"]),
        ("Simon and Garfunkel released Bridge over Troubled Water and won a Grammy.",
         ["Simon and Garfunkel released Bridge over Troubled Water",
          "Simon and Garfunkel won a Grammy"]),
        ("The war was fought between England and France and ended in 1453.",
         ["The war was fought between England and France", "The war ended in 1453"]),
        ("Sea levels rose in 1990 but fell in 2000.",
         ["Sea levels rose in 1990", "Sea levels fell in 2000"]),
    ],
)
def test_independent_facts_are_split(claim: str, parts: list[str]) -> None:
    assert split_claim(claim) == parts
    d = ok(claim)
    assert [c["c"] for c in d["claims"]] == parts
    assert [c["id"] for c in d["claims"]] == [f"s{i}" for i in range(1, len(parts) + 1)]


# -- splitting: negative cases --------------------------------------------------------


@pytest.mark.parametrize(
    "claim",
    [
        "Salt and pepper are common seasonings.",
        "Einstein won the Nobel Prize and the Copley Medal.",
        "Marie Curie discovered polonium and radium in 1898.",
        "The building was designed and built by Gustave Eiffel.",
        "Between 1950 and 1960 the population doubled.",
        "Jane Austen wrote Pride and Prejudice in 1813.",
        "Sea level rise has been slow and a constant, not accelerating",
        "Global warming is driving polar bears toward extinction",
        "The U.S. economy grew by 3.5 percent in 2019.",
        "Apollo 11. NASA landed on the Moon in 1969.",
    ],
)
def test_noun_coordination_and_single_predicates_stay_whole(claim: str) -> None:
    assert split_claim(claim) == [" ".join(claim.split())]
    assert len(ok(claim)["claims"]) == 1


def test_subclaims_helper_numbers_ids() -> None:
    claims = subclaims("Paris is in France. Berlin is in Germany. Rome is in Italy.")
    assert [(c.id, c.c) for c in claims] == [
        ("s1", "Paris is in France"), ("s2", "Berlin is in Germany"),
        ("s3", "Rome is in Italy"),
    ]


# -- failures -------------------------------------------------------------------------


@pytest.mark.parametrize("claim", ["", "   ", "\n\t", "...", "?!"])
def test_empty_claim_is_no_claims(claim: str) -> None:
    env = run(claim)
    assert (env.s, env.rb, env.d) == ("error", "state", None)
    assert env.e is not None and env.e.code == "NO_CLAIMS" and "claim" in env.e.msg


def test_query_too_long_is_propagated() -> None:
    env = run("Lost won an Emmy.", hints=["television series about a very long plane crash"])
    assert env.e is not None and env.e.code == "QUERY_TOO_LONG"
    assert env.rb == "state"


def test_hints_reach_the_planner() -> None:
    env = run("Lost won an Emmy.", hints=["video game"])
    assert env.d is not None
    assert "Lost (video game)" in env.d["plans"][0]["q"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [({"st": ST}, "claim"), ({"claim": "x"}, "st"), ({"claim": 5, "st": ST}, "claim"),
     ({"claim": "x", "st": ST, "extra": 1}, "extra")],
)
def test_schema_violations_are_bad_input(raw: dict[str, Any], field: str) -> None:
    env = SKILL.run(raw, ctx())
    assert env.e is not None and env.e.code == "BAD_INPUT" and field in env.e.msg


# -- properties -----------------------------------------------------------------------

_VOCAB = [
    "the", "and", "but", "was", "is", "born", "in", "won", "Einstein", "Paris", "he", "it",
    "Nobel", "Prize", "1950", "2000", "France", "salt", "pepper", "died", "raised", "a",
    ".", ";", ",", "capital", "of", "Lost", "landed", "Moon",
]
_claims = st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=30).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_claims, st.text(max_size=150)))
def test_property_parse_never_breaks_and_only_reuses_claim_words(claim: str) -> None:
    env = run(claim)
    if env.s == "error":
        assert env.e is not None and env.e.code == "NO_CLAIMS"
        return
    assert env.d is not None
    claims, plans = env.d["claims"], env.d["plans"]
    assert [c["id"] for c in claims] == [f"s{i}" for i in range(1, len(claims) + 1)]
    assert [p["id"] for p in plans] == [c["id"] for c in claims]
    words = set(tokens(claim))
    for c in claims:
        assert c["c"].strip()
        assert set(tokens(c["c"])) <= words  # splitting never invents words
    assert all(query_tokens(q) <= MAX_TOKENS for p in plans for q in p["q"])
    assert run(claim).to_json() == env.to_json()


def test_card_examples_match_the_skill() -> None:
    card = Path(__file__).resolve().parents[2] / "skills" / "cards" / "parse_claim.md"
    blocks = re.findall(r"```json\n(.*?)\n```", card.read_text(encoding="utf-8"), re.S)
    examples = blocks[-4:]
    for example_in, example_out in zip(examples[::2], examples[1::2], strict=True):
        env = SKILL.run(example_in.encode(), ctx())
        assert orjson.loads(env.to_json()) == orjson.loads(example_out)
