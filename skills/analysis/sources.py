"""Where a planned query should be sent (``src``) and how many results it asks for (``lim``).

Sources, first rule that applies:

1. **news** (then web) — a *recent* claim: it names a year no older than last year
   (judged against the injected clock) or says ``recently``, ``yesterday``, ``today``,
   ``this week``, ``latest`` ...
2. **kb** — a simple subject–relation–object fact between two named entities and
   nothing else (no numbers): ``Paris is the capital of France``, ``Barack Obama was
   born in Hawaii``. The knowledge base answers these in one triple; the composer sends
   ``["kb"]`` to ``kb_lookup`` and RETRIEVAL's follow-up searches what it leaves uncovered.
3. **web** — a personal or commercial claim (first/second person, prices, shopping):
   encyclopedias do not cover it.
4. **wiki** (then web) — everything else: the engine verifies encyclopedic facts.

``lim``: 3 for kb plans (one fact needs few rows) and for plans with three or more
queries (keeps a plan at 12 results or fewer); 5 for recent (news) plans, whose coverage
is spread over many outlets; 4 otherwise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from claimfsm.skills.analysis.lexicon import RECENCY_PHRASES, word_set
from claimfsm.skills.analysis.terms import Analysis
from claimfsm.skills.analysis.text import tokens

__all__ = [
    "SOURCES",
    "Source",
    "choose_lim",
    "choose_sources",
    "is_commercial_or_personal",
    "is_kb_fact",
    "is_recent",
]

Source = Literal["wiki", "web", "news", "kb"]
SOURCES: tuple[Source, ...] = ("wiki", "web", "news", "kb")

_COPULAS = frozenset({"is", "was"})
_ARTICLES = frozenset({"the", "a", "an"})
_REL_NOUNS = word_set(
    """
    capital author founder cofounder ceo president spouse wife husband father mother son
    daughter brother sister director creator inventor member currency language birthplace
    part home leader chairman owner mayor king queen headquarters
    """
)
_REL_PHRASES = frozenset(
    {
        ("born", "in"), ("located", "in"), ("in",), ("founded", "by"), ("written", "by"),
        ("directed", "by"), ("invented", "by"), ("created", "by"), ("married", "to"),
        ("headquartered", "in"),
    }
)
_PERSONAL = frozenset({"me", "my", "mine", "we", "our", "ours", "us", "you", "your", "yours"})
_COMMERCIAL = word_set(
    """
    price prices priced cost costs cheap cheaper cheapest buy buying bought sale sales
    discount deal deals coupon coupons review reviews shop shopping store stores recipe
    """
)


def is_recent(text: str, analysis: Analysis, now: datetime) -> bool:
    """A year >= last year (by ``now``), or a recency word or phrase."""
    if any(year >= now.year - 1 for year in analysis.years):
        return True
    padded = " " + " ".join(tokens(text)) + " "
    return any(f" {phrase} " in padded for phrase in RECENCY_PHRASES)


def is_kb_fact(analysis: Analysis) -> bool:
    """``<Entity> is|was [the] <relation> of <Entity>`` or ``<Entity> was born in
    <Entity>`` (and the other fixed relation phrases), covering the whole claim."""
    toks, spans = analysis.toks, analysis.spans
    if len(spans) < 2 or analysis.of_kind("number"):
        return False
    first, last = spans[0], spans[-1]
    lead = 1 if toks[0].lower == "the" else 0
    if first[0] != lead or last[1] != len(toks):
        return False
    middle = [t.lower for t in toks[first[1] : last[0]]]
    if middle and middle[-1] == "the":
        middle = middle[:-1]
    if not middle or middle[0] not in _COPULAS:
        return False
    rest = middle[1:]
    if tuple(rest) in _REL_PHRASES:
        return True
    if rest and rest[0] in _ARTICLES:
        rest = rest[1:]
    return len(rest) == 2 and rest[0] in _REL_NOUNS and rest[1] == "of"


def is_commercial_or_personal(text: str, analysis: Analysis) -> bool:
    """First/second person (``I``, ``my``, ``you``), prices or shopping words."""
    if any(sym in text for sym in "$€£"):
        return True
    for tok in analysis.toks:
        if tok.text == "I" or tok.lower in _COMMERCIAL:
            return True
        # "US" written in capitals is the country, not the pronoun.
        if tok.lower in _PERSONAL and not tok.text.isupper():
            return True
    return False


def choose_sources(text: str, analysis: Analysis, now: datetime) -> list[Source]:
    """The ordered source list for one claim (see the module docstring)."""
    if is_recent(text, analysis, now):
        return ["news", "web"]
    if is_kb_fact(analysis):
        return ["kb"]
    if is_commercial_or_personal(text, analysis):
        return ["web"]
    return ["wiki", "web"]


def choose_lim(src: list[Source], n_queries: int) -> int:
    """Results per query, 3..5 (see the module docstring)."""
    if "kb" in src or n_queries >= 3:
        return 3
    if "news" in src:
        return 5
    return 4
