"""Who does what to whom: the predicates of a text and the words on each side of them.

Rules over the judge's tokens (no parser, no model), one pass per clause, so the cost is
linear in the text:

- a **predicate** is a verb form the analysis recognises (an irregular past such as
  ``won``, a regular past such as ``landed`` not after a determiner), or a word of
  :data:`INFLUENCE` (``cause``, ``drives``, ``threatens``, ``leads to`` ...) or
  :data:`RELATIONS` (``orbits``, ``absorb``, ``flows`` ...) in any form, or a
  comparative before ``than`` (``larger than``);
  copulas (``is``, ``was``) and symmetric verbs (``met``, ``married``) carry no roles;
- its **agent** is the key words before it in its clause (the subject side), its
  **patient** the key words after it, up to the next predicate (the object side), at
  most :data:`WINDOW` tokens each way;
- a **passive** predicate (``X was caused by Y``, ``X, driven by Y``) or a reversing
  connective (``X due to Y``, ``X because of Y``, ``X results from Y``) swaps the sides:
  the words after ``by`` / ``to`` / ``of`` / ``from`` are the agent.

:mod:`claimfsm.skills.stance.align` compares the claim's frames with a sentence's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from claimfsm.skills.analysis.lexicon import IRREGULAR_VERBS, is_finite_verb, is_regular_past
from claimfsm.skills.analysis.text import STOPWORDS
from claimfsm.skills.stance.features import Analysis, Token
from claimfsm.skills.stance.lexicon import term

__all__ = ["COPULAS", "INFLUENCE", "RELATIONS", "WINDOW", "Frame", "frames"]

INFLUENCE: frozenset[str] = frozenset(term(w) for w in """
cause causes caused causing lead leads led result results resulted drive drives drove
driven driving trigger triggers triggered produce produces produced induce induces
induced contribute contributes contributed threaten threatens threatened harm harms
harmed affect affects affected damage damages damaged endanger endangers endangered
destroy destroys destroyed kill kills killed create creates created generate generates
generated due because responsible
""".split())
"""One family of directed relations: "X causes Y" and "Y threatens X" put the same two
things in opposite roles, whatever the verb."""

RELATIONS: frozenset[str] = frozenset(term(w) for w in """
orbit orbits circle circles absorb absorbs release releases emit emits flow flows empty
empties lie lies depend depends contain contains surround surrounds exceed exceeds
consume consumes turn turns convert converts feed feeds eat eats hunt hunts replace
replaces precede precedes follow follows host hosts include includes cover covers reach
reaches enter enters leave leaves orbiting flowing absorbing releasing emitting
""".split())
"""Present-tense relation verbs the past-form rules miss ("the Earth orbits the Sun",
"plants absorb carbon dioxide"): plain vocabulary, any form."""

COPULAS: frozenset[str] = frozenset("""
is are was were be been being am become became becomes remain remains remained seem
seems seemed has have had do does did will would can could shall should may might must
""".split())
"""Auxiliaries and linking verbs: they mark voice and tense, not who acts on whom."""

_SYMMETRIC: frozenset[str] = frozenset(term(w) for w in """
met meet meets married marry marries collided collide collides bordered border borders
joined join joins resembled resemble resembles equals equal
""".split())
# After these a relation word is a noun ("in orbit", "the flow"), not a verb.
_NOUN_BEFORE = frozenset({"the", "a", "an", "in", "into", "on", "of", "to", "for", "at",
                          "its", "their", "his", "her", "from", "by", "with"})
WINDOW = 40
"""Tokens looked at on each side of a predicate: bounds the work per predicate, so a
text's frames cost time linear in its length even for one endless clause."""
_MODIFIERS = frozenset({"last", "first", "final", "most", "least", "newly", "well", "best",
                        "recently", "widely", "commonly"})
_REVERSING = {term("due"): "to", term("because"): "of", term("result"): "from"}
_PASSIVE_MARK = "by"


@dataclass(frozen=True)
class Frame:
    """One predicate with the key terms on its agent and patient sides."""

    pred: str
    """The predicate's matching term (``land``, ``caus``)."""
    word: str
    """The predicate as written."""
    influence: bool
    """Whether it belongs to :data:`INFLUENCE` (then any member matches it)."""
    agent: tuple[Token, ...]
    patient: tuple[Token, ...]
    agent_terms: frozenset[str] = frozenset()
    """The agent side's terms (for set lookups)."""
    patient_terms: frozenset[str] = frozenset()
    """The patient side's terms."""


def _is_predicate(toks: tuple[Token, ...], i: int) -> bool:
    tok = toks[i]
    if not tok.low.isalpha() or tok.low in COPULAS or tok.term in _SYMMETRIC:
        return False
    if tok.word[0].isupper() and i > 0 and toks[i - 1].clause == tok.clause:
        return False  # a name inside the sentence, not a verb
    if tok.term in RELATIONS and not (i > 0 and toks[i - 1].low in _NOUN_BEFORE):
        return True
    if i + 1 < len(toks) and toks[i + 1].low == "than" and tok.clause == toks[i + 1].clause:
        return True  # a comparison: "X is larger than Y" relates X to Y one way only
    if tok.term in INFLUENCE:
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        if tok.term in _REVERSING:
            return nxt == _REVERSING[tok.term] or (tok.term == term("result")
                                                   and nxt == "in")
        return not (i > 0 and toks[i - 1].low in ("the", "a", "an", "this", "that"))
    prev = toks[i - 1].low if i > 0 and toks[i - 1].clause == tok.clause else None
    if prev in _MODIFIERS:
        return False  # "the last crewed landing": a past form used as an adjective
    return (tok.low in IRREGULAR_VERBS or is_regular_past(tok.low)) and \
        is_finite_verb(tok.low, prev)


def _key(tok: Token) -> bool:
    return tok.low not in STOPWORDS and tok.low not in COPULAS and any(
        c.isalpha() for c in tok.low)


@lru_cache(maxsize=1024)
def frames(text: Analysis) -> tuple[Frame, ...]:
    """Every role-carrying predicate of ``text`` with its two sides (see the module doc)."""
    toks = text.tokens
    preds = [i for i in range(len(toks)) if _is_predicate(toks, i)]
    is_pred = frozenset(preds)
    out: list[Frame] = []
    for n, p in enumerate(preds):
        tok = toks[p]
        clause = tok.clause
        nxt = next((q for q in preds[n + 1:] if toks[q].clause == clause), len(toks))
        # Scan outward from the predicate only while in its clause: linear per frame.
        lo = p
        while lo > max(0, p - WINDOW) and toks[lo - 1].clause == clause:
            lo -= 1
        hi = p + 1
        while hi < min(nxt, p + 1 + WINDOW) and toks[hi].clause == clause:
            hi += 1
        before = [toks[i] for i in range(lo, p) if i not in is_pred and _key(toks[i])]
        after = [toks[i] for i in range(p + 1, hi) if i not in is_pred and _key(toks[i])]
        marker = toks[p + 1].low if p + 1 < hi else ""
        near = {toks[i].low for i in range(p + 1, min(hi, p + 4))}
        reversing = tok.term in _REVERSING and marker == _REVERSING[tok.term]
        passive = marker == _PASSIVE_MARK or (p > lo and toks[p - 1].low in COPULAS
                                              and _PASSIVE_MARK in near)
        if reversing or passive:
            agent, patient = after, before
        else:
            agent, patient = before, after
        out.append(Frame(pred=tok.term, word=tok.word, influence=tok.term in INFLUENCE,
                         agent=tuple(agent), patient=tuple(patient),
                         agent_terms=frozenset(t.term for t in agent),
                         patient_terms=frozenset(t.term for t in patient)))
    return tuple(out)
