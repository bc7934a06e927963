"""Which side of a one-way word each thing stands on: "X into Y", "X larger than Y".

Some small words relate two things one way only: ``into`` (what turns or flows into
what), ``than`` after a comparative (``larger``, ``more``), ``between`` (what lies between
which two), ``around`` and ``orbits`` (what circles what), ``within`` (what lies in what)
and a fraction's ``of`` (``one sixth of``). When the claim has one of them with its key
words on both sides, a sentence with the same word (or one of its family) that puts the
claim's left-side thing on the right and its right-side thing on the left states the
reverse relation: ``role swapped``, which blocks support. A sentence where some
occurrence keeps the claim's sides passes, and a comparative is matched only by the same
comparative (``smaller`` with the sides swapped says the same as ``larger``, and is no
swap).

Rules over the judge's tokens, no parser: each side is the clause's key words up to
:data:`~claimfsm.skills.stance.roles.WINDOW` tokens from the word, so the cost is linear
in the two texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from claimfsm.skills.analysis.text import STOPWORDS
from claimfsm.skills.stance.features import Analysis, Token, close
from claimfsm.skills.stance.roles import COPULAS, WINDOW

__all__ = ["MARKERS", "order_check"]

MARKERS: dict[str, str] = {
    "into": "into", "onto": "into",
    "between": "between",
    "around": "around", "orbit": "around", "orbits": "around", "orbited": "around",
    "circles": "around", "circled": "around", "revolves": "around",
    "within": "in", "inside": "in",
}
"""A one-way word of the claim -> its family; a sentence word of the same family counts."""

# A sentence says "in" where a claim says "within"; the claim's own "in" is too common to
# carry a direction ("in 1969", "in Australia"), so it only counts on the sentence side.
_SENTENCE_ONLY: dict[str, str] = {"in": "in"}
_FRACTIONS = frozenset({"half", "third", "thirds", "quarter", "quarters", "fourth",
                        "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                        "percent", "times", "twice"})
_COMPARATIVES = frozenset({"more", "less", "fewer"})


@dataclass(frozen=True)
class _Sides:
    word: str
    left: frozenset[str]
    right: frozenset[str]


def _key(tok: Token) -> bool:
    return (tok.low not in STOPWORDS and tok.low not in COPULAS
            and any(c.isalpha() for c in tok.low) and tok.low not in _FRACTIONS)


def _comparative(toks: Sequence[Token], i: int) -> int | None:
    # "larger than", "more separate bones than": the index of "than", if the comparison
    # is between things (not "more than 100").
    tok = toks[i]
    if not (tok.low in _COMPARATIVES or (tok.low.endswith("er") and len(tok.low) > 4)):
        return None
    for j in range(i + 1, min(len(toks), i + 5)):
        if toks[j].clause != tok.clause:
            return None
        if toks[j].low == "than":
            nxt = toks[j + 1].low if j + 1 < len(toks) else ""
            return None if nxt[:1].isdigit() else j
    return None


def _family(toks: Sequence[Token], i: int, claim: bool) -> str | None:
    low = toks[i].low
    if low == "of" and i > 0 and toks[i - 1].low in _FRACTIONS:
        return "fraction"
    if low in MARKERS:
        return MARKERS[low]
    return None if claim else _SENTENCE_ONLY.get(low)


def _side(toks: Sequence[Token], lo: int, hi: int, clause: int) -> frozenset[str]:
    return frozenset(toks[i].term for i in range(max(0, lo), min(len(toks), hi))
                     if toks[i].clause == clause and _key(toks[i]))


def _sides(toks: Sequence[Token], i: int, right_from: int) -> _Sides:
    clause = toks[i].clause
    return _Sides(toks[i].word, _side(toks, i - WINDOW, i, clause),
                  _side(toks, right_from + 1, right_from + 1 + WINDOW, clause))


def _claim_markers(toks: Sequence[Token]) -> list[tuple[str, _Sides]]:
    out: list[tuple[str, _Sides]] = []
    for i in range(len(toks)):
        than = _comparative(toks, i)
        if than is not None:
            out.append(("cmp:" + toks[i].term, _sides(toks, i, than)))
            continue
        family = _family(toks, i, claim=True)
        if family is not None:
            out.append((family, _sides(toks, i, i)))
    return out


def _sentence_markers(toks: Sequence[Token], family: str) -> list[_Sides]:
    out: list[_Sides] = []
    for i in range(len(toks)):
        if family.startswith("cmp:"):
            if toks[i].term == family[4:]:
                than = _comparative(toks, i)
                sides = _sides(toks, i, i if than is None else than)
                # "Antarctica is larger": no "than", so nothing stands on the right.
                out.append(sides if than is not None else
                           _Sides(sides.word, sides.left, frozenset()))
        elif _family(toks, i, claim=False) == family:
            out.append(_sides(toks, i, i))
    return out


def _found(terms: frozenset[str], side: frozenset[str]) -> frozenset[str]:
    return frozenset(t for t in terms if t in side or any(close(t, s) for s in side))


def _crossed(left: frozenset[str], right: frozenset[str], ss: _Sides,
             comparative: bool) -> bool | None:
    # True: some claim-left thing stands right of the word and some claim-right thing left
    # of it (a thing both sides share, such as the subject, says nothing); False: the
    # sentence keeps the claim's sides; None: neither.
    left_moved = _found(left, ss.right) - _found(left, ss.left)
    right_moved = _found(right, ss.left) - _found(right, ss.right)
    if right_moved and (left_moved or (comparative and not ss.right)):
        return True
    if (_found(right, ss.right) - _found(right, ss.left)) and not left_moved:
        return False
    return None


def order_check(claim: Analysis, sent: Analysis, key: frozenset[str]) -> tuple[str, str] | None:
    """``("role swapped", detail)`` when the sentence puts the claim's two sides of a
    one-way word the other way round (see the module doc), else None."""
    for family, cs in _claim_markers(claim.tokens):
        left, right = (cs.left & key) - cs.right, (cs.right & key) - cs.left
        if not left or not right:
            continue
        found = [_crossed(left, right, ss, family.startswith("cmp:"))
                 for ss in _sentence_markers(sent.tokens, family)]
        if True in found and False not in found:
            return ("role swapped", f"the claim's '{cs.word}' relates its two sides the "
                    "other way round in the sentence")
    return None
