"""The evidence a sentence offers about a claim, as small explainable features.

Each function reads one kind of signal: which key terms the sentence covers, which
numbers agree or clash, whether one side denies what the other asserts, and whether the
two point in opposite directions. :mod:`claimfsm.skills.stance.lexical` weighs them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from claimfsm.skills.analysis.text import STOPWORDS, words
from claimfsm.skills.stance.lexicon import (
    ANTONYMS,
    DIRECTION,
    EXCLUSIVE,
    HEDGES,
    NEGATION_EXCEPTIONS,
    NEUTRAL_BIGRAMS,
    ORDINALS,
    POST_NEGATIONS,
    PRE_NEGATIONS,
    is_month,
    is_name,
    term,
)
from claimfsm.skills.stance.numbers import NUMBER_WORDS, Num, find_numbers
from claimfsm.skills.stance.term_index import TermIndex, close

__all__ = [
    "Analysis",
    "ClaimTerm",
    "Coverage",
    "Token",
    "analyze",
    "antonym_clash",
    "claim_terms",
    "close",
    "coverage",
    "denial",
    "direction_check",
    "entity_mismatch",
    "hedge",
    "other_entity",
    "unstated_change",
]

# Clause breaks bound a negation's reach ("no delay, and NASA landed" denies nothing).
_CLAUSE = re.compile(r"[;:()]|,\s|\s(?:but|while|whereas|however|although|though)\s", re.I)


@dataclass(frozen=True)
class Token:
    """One word: as written, lower-cased, its matching term, and its clause."""

    word: str
    low: str
    term: str
    clause: int


@dataclass(frozen=True)
class Analysis:
    """A text split into tokens and numbers."""

    tokens: tuple[Token, ...]
    numbers: tuple[Num, ...]

    @property
    def terms(self) -> frozenset[str]:
        """Every token's matching term."""
        return self._index.terms

    @cached_property
    def _index(self) -> TermIndex:
        # Built once per text (analyze is cached), read by every claim term of every
        # claim the text is matched against.
        return TermIndex.of(t.term for t in self.tokens)

    @cached_property
    def _key_terms(self) -> tuple[ClaimTerm, ...]:
        return _claim_terms(self)


@dataclass(frozen=True)
class ClaimTerm:
    """A key term of the claim, the word it came from, and whether it is a name."""

    term: str
    word: str
    entity: bool


@dataclass(frozen=True)
class Coverage:
    """Which claim terms a sentence covers, and where (token positions)."""

    covered: tuple[ClaimTerm, ...]
    missing: tuple[ClaimTerm, ...]
    positions: frozenset[int]


def _normalise(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


@lru_cache(maxsize=2048)
def analyze(text: str) -> Analysis:
    """Tokens (possessive ``'s`` dropped) with clause indexes, and the numbers.

    Cached by text (2,048 texts, ~11 KB each): a sentence is judged against every
    subclaim, by EXTRACT, VERIFY and AGGREGATE, and the result is immutable."""
    text = _normalise(text)
    toks: list[Token] = []
    for clause, part in enumerate(_CLAUSE.split(text)):
        for w in words(part):
            if w.lower().endswith("'s"):
                w = w[:-2]
            prev = toks[-1] if toks and toks[-1].clause == clause else None
            if prev is not None and w.isdigit() and is_name(prev.word):
                # "Apollo 13" is one name: Apollo 11 is another thing, not another number.
                name = f"{prev.word} {w}"
                toks[-1] = Token(word=name, low=name.lower(), term=f"{prev.term} {w}",
                                 clause=clause)
                continue
            toks.append(Token(word=w, low=w.lower(), term=term(w), clause=clause))
    return Analysis(tokens=tuple(toks), numbers=find_numbers(text))


def claim_terms(claim: Analysis) -> tuple[ClaimTerm, ...]:
    """The claim's key terms in order: no stopwords, cues, hedges or bare numbers."""
    return claim._key_terms


def _claim_terms(claim: Analysis) -> tuple[ClaimTerm, ...]:
    seen: set[str] = set()
    out: list[ClaimTerm] = []
    for t in claim.tokens:
        if (
            t.low in STOPWORDS or t.low in PRE_NEGATIONS or t.low in POST_NEGATIONS
            or t.low in HEDGES or t.low in NUMBER_WORDS or t.low.endswith("n't")
            or len(t.low) < 2 or t.low[0].isdigit() or t.term in seen
        ):
            continue
        seen.add(t.term)
        out.append(ClaimTerm(term=t.term, word=t.word, entity=t.word[0].isupper()))
    return tuple(out)


def _matches(ct: str, tok: Token) -> bool:
    if close(ct, tok.term):
        return True
    # An antonym or another word for a change is still about the same thing.
    return (ct in DIRECTION and tok.term in DIRECTION) or tok.term in ANTONYMS.get(ct, ())


def coverage(terms: Sequence[ClaimTerm], sent: Analysis) -> Coverage:
    """Which claim terms occur in the sentence (same term, antonym or direction word)."""
    covered: list[ClaimTerm] = []
    missing: list[ClaimTerm] = []
    positions: set[int] = set()
    index = sent._index
    for ct in terms:
        hits = index.hits(ct.term)
        (covered if hits else missing).append(ct)
        positions.update(hits)
    return Coverage(tuple(covered), tuple(missing), frozenset(positions))


def denial(
    text: Analysis, targets: frozenset[int], window: int,
    *, content: frozenset[int] | None = None,
) -> tuple[str, str] | None:
    """``(cue, denied word)`` when a negation cue reaches a target token in its clause.

    With ``content`` (positions of all key words), only the first key word a cue reaches
    counts: "No human landed" denies "human", so a sentence about a rover landing does
    not contradict it."""
    toks = text.tokens
    for i, tok in enumerate(toks):
        if tok.low in PRE_NEGATIONS or tok.low.endswith("n't"):
            if i + 1 < len(toks) and toks[i + 1].low in NEGATION_EXCEPTIONS:
                continue
            reach = range(i + 1, min(len(toks), i + 1 + window))
        elif tok.low in POST_NEGATIONS:
            reach = range(i - 1, max(-1, i - 1 - window), -1)
        else:
            continue
        for j in reach:
            if toks[j].clause != tok.clause:
                break
            if j in targets:
                return tok.word, toks[j].word
            if content is not None and j in content:
                break
    return None


def _directions(text: Analysis) -> dict[str, str]:
    found: dict[str, str] = {}
    for i, tok in enumerate(text.tokens):
        if tok.term not in DIRECTION:
            continue
        prev = text.tokens[i - 1].term if i else ""
        nxt = text.tokens[i + 1].term if i + 1 < len(text.tokens) else ""
        if (prev, tok.term) in NEUTRAL_BIGRAMS or (tok.term, nxt) in NEUTRAL_BIGRAMS:
            continue
        found.setdefault(DIRECTION[tok.term], tok.word)
    return found


def direction_check(
    claim: Analysis, sent: Analysis
) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
    """``(clash, agreement)``: each a (claim word, sentence word) pair or None."""
    cd, sd = _directions(claim), _directions(sent)
    for d, word in sorted(cd.items()):
        if d in sd:
            return None, (word, sd[d])
        opposite = "down" if d == "up" else "up"
        if opposite in sd:
            return (word, sd[opposite]), None
    return None, None


def antonym_clash(claim: Analysis, sent: Analysis) -> tuple[str, str] | None:
    """A claim word whose antonym, and not the word itself, is in the sentence."""
    sterms = sent.terms
    for tok in claim.tokens:
        opposites = ANTONYMS.get(tok.term, frozenset())
        if tok.term in sterms or not opposites & sterms:
            continue
        other = next(s.word for s in sent.tokens if s.term in opposites)
        return tok.word, other
    return None


def entity_mismatch(
    terms: Sequence[ClaimTerm], cov: Coverage, sent: Analysis
) -> tuple[str, str, str] | None:
    """``(claim name, sentence name, relation)`` when an exclusive relation of the claim
    (capital, largest, born ...) holds for a different name in the sentence."""
    relation = next((ct for ct in cov.covered if ct.term in EXCLUSIVE), None)
    lost = " ".join(ct.word for ct in cov.missing if ct.entity)
    if relation is None or not lost:
        return None
    toks = sent.tokens
    if any(t.term == relation.term and n and toks[n - 1].low in ORDINALS
           for n, t in enumerate(toks)):
        return None  # "the second highest": another rank, no contradiction
    known = [ct.term for ct in terms]
    for tok in toks:
        if (
            tok.word[0].isupper() and tok.low not in STOPWORDS and not is_month(tok.word)
            and not any(close(k, tok.term) for k in known) and not tok.word[0].isdigit()
        ):
            return lost, tok.word, relation.word
    return None


def other_entity(cov: Coverage, sent: Analysis) -> tuple[str, str] | None:
    """``(claim name, sentence name)`` when the sentence is about another numbered
    thing of the same name ("Apollo 13" vs "Apollo 11")."""
    for ct in cov.missing:
        base, _, number = ct.term.partition(" ")
        if not number:
            continue
        other = next((t.word for t in sent.tokens if t.term.startswith(base + " ")), None)
        if other is not None:
            return ct.word, other
    return None


def unstated_change(claim: Analysis, sent: Analysis) -> str | None:
    """The claim's word for a change when the sentence states no change at all."""
    cd = _directions(claim)
    if cd and not _directions(sent):
        return next(iter(cd.values()))
    return None


def hedge(text: Analysis) -> str | None:
    """The first hedge word ("may", "suggests"), if the text is tentative."""
    for i, tok in enumerate(text.tokens):
        if tok.low in HEDGES and (tok.word.islower() or i == 0) and not is_month(tok.word):
            return tok.word
    return None
