"""Alignment checks: does the sentence put the claim's things in the same roles?

Key-term overlap says a sentence is *about* the claim; these checks say whether it
states the same fact. Each returns a :class:`Check` whose ``name`` is one of
:data:`CHECKS`; a check either **blocks** support (the sentence cannot be SUPPORTS, it
is NOT_ENOUGH_INFO) or **refutes** (the sentence states the opposite). The judge shows a
check as one reason, ``"<name>: <detail>"`` (``role swapped: 'Armstrong' is not who
'stayed' (the sentence has 'Michael Collins')``, ``number not confirmed: 1850``), and
AGGREGATE repeats the deciding one for the claim (docs/judge.md, "Alignment checks").

- **role swapped** (:func:`role_check`): a predicate of the claim recurs in the sentence
  (same verb, or both of the cause/harm family :data:`~claimfsm.skills.stance.roles.INFLUENCE`)
  with the claim's agent on the patient side and its patient on the agent side
  (refutes when the verb is the same, else blocks), or with the claim's patient but
  another agent while the claim's agent stands elsewhere in the sentence (blocks). A
  sentence where some occurrence keeps both roles passes.
- **quantifier not confirmed** / **quantifier differs** (:func:`quantifier_check`): a claim
  saying all, every, always, never, only, first or last needs the sentence to say it too;
  the opposite (all / none, always / never, first / last) refutes, a weaker one (some,
  most, often, one of) blocks.
- **entity not mentioned** and **argument not mentioned**
  (:mod:`claimfsm.skills.stance.names`): a name of the claim, or the agent of its first
  predicate, that the sentences a SUPPORTS verdict rests on do not name (read together).
- **cause not confirmed** / **role swapped** (:mod:`claimfsm.skills.stance.causal`): a claim
  that X causes Y (causes, leads to, drives, because, due to, is what ...) needs a
  sentence stating that link the same way round.
- **role swapped** (:mod:`claimfsm.skills.stance.order`): the two sides of a one-way word
  (``into``, ``than`` after a comparative, ``between``, ``around`` / ``orbits``,
  ``within``, a fraction's ``of``) the other way round in the sentence (blocks).
- **number not confirmed** is decided by :func:`claimfsm.skills.stance.numbers.compare_numbers`
  (the judge blocks support on any unconfirmed number; see there for tolerance and units).

Every check is a pass over the tokens of the two texts (frames are found per clause),
so the cost stays linear in their length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from claimfsm.skills.stance.causal import causal_check
from claimfsm.skills.stance.features import Analysis, Token, close
from claimfsm.skills.stance.lexicon import EXCLUSIVE, ORDINALS, term
from claimfsm.skills.stance.order import order_check
from claimfsm.skills.stance.roles import Frame, frames

__all__ = [
    "CHECKS",
    "Check",
    "align",
    "judgment_check",
    "quantifier_check",
    "role_check",
]

CHECKS: tuple[str, ...] = (
    "role swapped", "number not confirmed", "quantifier not confirmed",
    "quantifier differs", "entity not mentioned", "argument not mentioned",
    "cause not confirmed", "judgment not confirmed",
)
"""The names of the alignment checks, as they start a reason (a stable vocabulary)."""


@dataclass(frozen=True)
class Check:
    """One failed check: its name (of :data:`CHECKS`), what it found, and whether the
    sentence refutes the claim (else it only blocks support)."""

    name: str
    detail: str
    refutes: bool = False

    @property
    def reason(self) -> str:
        """``"<name>: <detail>"``, the form reasons carry."""
        return f"{self.name}: {self.detail}"


def _hits(terms: Sequence[str], side: frozenset[str]) -> list[str]:
    # Exact terms by set lookup; only a term long enough to have close variants
    # ("australia" / "australian") is compared word by word.
    return [t for t in terms if t in side or (len(t) >= 5 and any(close(t, s) for s in side))]


def _terms(side: Sequence[Token], key: frozenset[str]) -> list[str]:
    return list(dict.fromkeys(t.term for t in side if t.term in key))


def _words(side: Sequence[Token], terms: Sequence[str]) -> str:
    return " ".join(t.word for t in side if t.term in terms)


def _same(cf: Frame, sf: Frame) -> bool:
    return close(cf.pred, sf.pred) or (cf.influence and sf.influence)


def _frame_check(cf: Frame, sfs: Sequence[Frame], key: frozenset[str],
                 sentence_terms: frozenset[str]) -> Check | None:
    agent, patient = _terms(cf.agent, key), _terms(cf.patient, key)
    if not agent or not patient:
        return None
    swapped: Check | None = None
    moved: Check | None = None
    for sf in (f for f in sfs if _same(cf, f)):
        a_a, a_p = _hits(agent, sf.agent_terms), _hits(agent, sf.patient_terms)
        p_p, p_a = _hits(patient, sf.patient_terms), _hits(patient, sf.agent_terms)
        if a_a and p_p:
            return None  # some occurrence keeps the claim's roles
        if a_p and p_a and not p_p and swapped is None:
            explicit = close(cf.pred, sf.pred)
            swapped = Check("role swapped",
                            f"claim '{_words(cf.agent, agent)} {cf.word} "
                            f"{_words(cf.patient, patient)}', sentence '"
                            f"{_words(sf.agent, p_a)} {sf.word} {_words(sf.patient, a_p)}'",
                            refutes=explicit)
        elif a_a and not p_p and sf.patient and moved is None and any(
                any(close(q, s) for s in sentence_terms) for q in patient):
            others = " ".join(t.word for t in sf.patient if not any(close(t.term, q)
                                                                     for q in patient))
            moved = Check("role swapped", f"'{_words(cf.patient, patient)}' is not what "
                          f"'{sf.word}' takes (the sentence has '{others}')")
        elif p_p and not a_a and sf.agent and moved is None and any(
                any(close(a, s) for s in sentence_terms) for a in agent):
            others = " ".join(t.word for t in sf.agent if not any(close(t.term, a)
                                                                   for a in agent))
            moved = Check("role swapped", f"'{_words(cf.agent, agent)}' is not who "
                          f"'{sf.word}' (the sentence has '{others}')")
    return swapped or moved


def role_check(claim: Analysis, sent: Analysis, key: frozenset[str]) -> Check | None:
    """``role swapped`` for the first claim predicate whose roles the sentence swaps
    (``key``: the claim's key terms, the only words that count on either side)."""
    sfs = frames(sent)
    if not sfs:
        return None
    sentence_terms = sent.terms
    for cf in frames(claim):
        found = _frame_check(cf, sfs, key, sentence_terms)
        if found is not None:
            return found
    return None


# Each claim quantifier: the words that confirm it, and those that state the opposite.
_SAME: dict[str, frozenset[str]] = {
    "all": frozenset({"all", "every", "each", "entire", "whole", "always"}),
    "every": frozenset({"all", "every", "each", "always"}),
    "always": frozenset({"always", "every", "all", "invariably"}),
    "never": frozenset({"never", "not", "no", "none", "nothing", "nobody", "cannot"}),
    "only": frozenset({"only", "sole", "solely", "alone", "exclusively"}),
    "first": frozenset({"first", "earliest"}),
    "last": frozenset({"last", "final", "latest"}),
}
_OPPOSITE: dict[str, frozenset[str]] = {
    "all": frozenset({"none", "no"}),
    "every": frozenset({"none", "no"}),
    "always": frozenset({"never"}),
    "never": frozenset({"always"}),
    "first": frozenset({"last", "second", "third", "later"}),
    "last": frozenset({"first"}),
}
_IDIOM_BEFORE = frozenset({"in", "at", "above", "after", "for"})
_WEAKER: frozenset[str] = frozenset(
    {"some", "most", "many", "few", "several", "often", "sometimes", "usually", "partly",
     "mostly", "also", "among", "rarely", "occasionally"})


_SPAN_WORDS = frozenset({"last", "first", "past"})
_TIME_UNITS = frozenset({"century", "centuries", "decade", "decades", "year", "years",
                         "month", "months", "week", "weeks", "day", "days", "millennium",
                         "hundred", "thousand", "million", "few", "several", "couple"})
_COUNT_WORDS = frozenset({"two", "three", "four", "five", "six", "seven", "eight", "nine",
                          "ten", "twenty", "thirty", "fifty"})


def _time_span(after: Sequence[Token]) -> bool:
    # "last century", "last 150 years", "last few decades", "past two centuries": a
    # number or a unit of time right after the word, or a count word and then a unit.
    if not after:
        return False
    first = after[0].low
    return (first in _TIME_UNITS or first[:1].isdigit()
            or (first in _COUNT_WORDS and len(after) > 1 and after[1].low in _TIME_UNITS))


def quantifier_check(claim: Analysis, sent: Analysis) -> Check | None:
    """``quantifier differs`` / ``quantifier not confirmed`` for the claim's first
    quantifier the sentence does not repeat (see the module doc)."""
    said = {t.low for t in sent.tokens} | {"not" for t in sent.tokens if t.low.endswith("n't")}
    for n, tok in enumerate(claim.tokens):
        if n and claim.tokens[n - 1].low in _IDIOM_BEFORE and tok.low == "all":
            continue  # "in all", "at all", "above all": no claim about every member
        if tok.low in _SPAN_WORDS and _time_span(claim.tokens[n + 1:n + 3]):
            continue  # "the last century", "the first 50 years": a span of time, no rank
        same = _SAME.get(tok.low)
        if same is None or same & said:
            continue
        opposite = _OPPOSITE.get(tok.low, frozenset()) & said
        if opposite:
            return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                         f"'{min(opposite)}'", refutes=True)
        weaker = _WEAKER & said
        if weaker:
            return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                         f"'{min(weaker)}'")
        return Check("quantifier not confirmed", f"'{tok.word}'")
    return _exclusive_check(claim, sent, said)


_PLURAL = frozenset({"several", "many", "among", "some", "multiple"})
_EXCLUSIVE_WORDS = frozenset({"only", "sole"})


def _exclusive_check(claim: Analysis, sent: Analysis, said: set[str]) -> Check | None:
    # The sentence makes something unique that the claim makes one of many ("the only
    # natural satellite" / "one of several"), or ranks it below where the claim puts it
    # ("the second highest" / "the highest").
    claimed = {t.low for t in claim.tokens}
    plural = _PLURAL & claimed
    if plural and _EXCLUSIVE_WORDS & said and not _EXCLUSIVE_WORDS & claimed:
        return Check("quantifier differs", f"claim '{min(plural)}' vs sentence "
                     f"'{min(_EXCLUSIVE_WORDS & said)}'", refutes=True)
    toks = sent.tokens
    names = [t.term for t in claim.tokens[1:] if t.word[:1].isupper()]
    if not all(any(close(n, s) for s in sent.terms) for n in names):
        return None  # a rank of something else ("K2 is the second highest")
    for n, tok in enumerate(toks):
        if (n and toks[n - 1].low in ORDINALS and tok.term in EXCLUSIVE
                and tok.term in claim.terms and not ORDINALS & claimed):
            return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                             f"'{toks[n - 1].word} {tok.word}'", refutes=True)
    return None


# Words by which a claim judges a fact rather than states it: "sea level rise is
# exaggerated" is not supported by a sentence saying sea level rises.
_JUDGED = frozenset(term(w) for w in """
exaggerated exaggerate exaggerates exaggerating exaggeration overestimate overestimates
overestimated overestimating overstated overstate overblown hoax myth myths scam fraud
retracted retract debunked misleading flawed alarmist alarmism propaganda fake
""".split())


def judgment_check(claim: Analysis, sent: Analysis) -> Check | None:
    """``judgment not confirmed``: the claim judges a fact (exaggerated, a hoax, a myth,
    overestimated, retracted) and the sentence states the fact without that judgment.
    It blocks; it does not refute (measured: as a refutation it took right verdicts on
    the held-out half of dev, docs/judge.md)."""
    said = sent.terms
    for tok in claim.tokens:
        if tok.term in _JUDGED and not any(close(tok.term, s) for s in said):
            return Check("judgment not confirmed", f"'{tok.word}'")
    return None


_MEMO: dict[tuple[str, int, int, frozenset[str]],
            tuple[Analysis, Analysis, tuple[Check, ...]]] = {}
_MEMO_SIZE = 4096


def align(claim: str, ca: Analysis, sa: Analysis, key: frozenset[str],
          context: frozenset[str] = frozenset()) -> tuple[Check, ...]:
    """Every failed alignment check of the sentence ``sa`` against the claim (``ca``, and
    its text), refuting ones first. ``context``: the terms of the sentence's document
    title, which name what the sentence is about ("It was completed in 1889" in the
    article "Eiffel Tower"). The entity check is not among them: it reads every sentence
    a verdict cites together, and so does the argument check (names.py)."""
    del context  # names are checked over a verdict's sentences together (names.py)
    # The learned judge's features and the lexical judge align the same pair one after
    # the other; analyses are cached by text, so the same pair is the same two objects
    # (kept in the entry, so a recycled id can never match).
    memo = (claim, id(ca), id(sa), key)
    hit = _MEMO.get(memo)
    if hit is not None and hit[0] is ca and hit[1] is sa:
        return hit[2]
    found = _align(ca, sa, key)
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.clear()
    _MEMO[memo] = (ca, sa, found)
    return found


def _align(ca: Analysis, sa: Analysis, key: frozenset[str]) -> tuple[Check, ...]:
    causal = causal_check(ca, sa, key)
    order = order_check(ca, sa, key) if causal is None else None
    found = [c for c in (role_check(ca, sa, key), quantifier_check(ca, sa),
                         judgment_check(ca, sa),
                         Check(*causal) if causal else None,
                         Check(*order) if order else None) if c is not None]
    return tuple(sorted(found, key=lambda c: not c.refutes))
