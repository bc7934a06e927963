"""Cause and effect: a claim that X causes Y is supported only by a sentence saying so.

A causal claim names a cause and an effect around a cue: forward cues put the cause
first ("X causes / leads to / drives / triggers / is the reason Y", "X is what warms Y"),
reversing cues put it last ("Y because X", "Y due to X", "Y is caused by X"). A sentence
supports the claim's causal link only when it has a cue too and, read the same way, puts
more of the claim's cause words on its cause side and effect words on its effect side
than the other way round. Otherwise the check fails:

- ``role swapped``: the sentence states the link the other way round (the effect as the
  cause): "Roads become icy because salt is spread on them" against "Salt is spread on
  icy roads because it lowers the freezing point";
- ``cause not confirmed``: the sentence states no causal link between them.

One pass over each text's tokens: the sides are the words before and after the cue, at
most :data:`~claimfsm.skills.stance.roles.WINDOW` tokens each way.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from claimfsm.skills.stance.features import Analysis, Token, close
from claimfsm.skills.stance.lexicon import term
from claimfsm.skills.stance.roles import WINDOW

__all__ = ["causal_check", "causal_sides"]

_FORWARD: frozenset[str] = frozenset(term(w) for w in """
cause causes causing lead leads leading result results drive drives drove driving trigger
triggers triggered triggering reason responsible produce produces produced producing
""".split())
_REVERSE_AFTER = {"because": "of", "due": "to", "thanks": "to"}
_BY = "by"
_COPULAS = frozenset({"is", "are", "was", "were"})


def _cue(toks: Sequence[Token], i: int) -> str | None:
    """``"forward"`` / ``"reverse"`` when a causal cue starts at token ``i``."""
    tok = toks[i]
    nxt = toks[i + 1].low if i + 1 < len(toks) else ""
    if tok.low in _REVERSE_AFTER:
        return "reverse"  # "because X", "because of X", "due to X"
    if tok.low == "what" and i > 0 and toks[i - 1].low in _COPULAS:
        return "forward"  # "X is what warms Y"
    if tok.term not in _FORWARD:
        return None
    if tok.term == term("result") and nxt in ("from", "of"):
        return "reverse"
    if nxt == _BY:
        return "reverse"  # "caused by X", "driven by X"
    if tok.term in (term("lead"), term("result")) and nxt not in ("to", "in"):
        return None  # "lead" the metal, "the result"
    return "forward"


@lru_cache(maxsize=1024)
def causal_sides(text: Analysis) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """``(cause terms, effect terms)`` around each causal cue of ``text``."""
    toks = text.tokens
    out = []
    for i in range(len(toks)):
        way = _cue(toks, i)
        if way is None:
            continue
        before = frozenset(t.term for t in toks[max(0, i - WINDOW):i])
        after = frozenset(t.term for t in toks[i + 1:i + 1 + WINDOW])
        out.append((before, after) if way == "forward" else (after, before))
    return tuple(out)


def _hits(terms: frozenset[str], side: frozenset[str]) -> int:
    return sum(1 for t in terms
               if t in side or (len(t) >= 5 and any(close(t, s) for s in side)))


def causal_check(claim: Analysis, sent: Analysis,
                 key: frozenset[str]) -> tuple[str, str] | None:
    """``(check name, detail)`` when the claim states a causal link (its first cue) that
    the sentence does not state the same way round; None when it does, or the claim
    states none. ``key``: the claim's key terms, the only words that count."""
    sides = causal_sides(claim)
    if not sides:
        return None
    cause, effect = (side & key for side in sides[0])
    if not cause or not effect:
        return None
    shown = f"'{' '.join(sorted(cause))}' -> '{' '.join(sorted(effect))}'"
    best_same = best_swap = 0
    for s_cause, s_effect in causal_sides(sent):
        same = _hits(cause, s_cause) + _hits(effect, s_effect)
        swap = _hits(cause, s_effect) + _hits(effect, s_cause)
        if same > swap and _hits(cause, s_cause) and _hits(effect, s_effect):
            return None
        best_same, best_swap = max(best_same, same), max(best_swap, swap)
    if best_swap > best_same:
        return "role swapped", f"cause and effect reversed: claim {shown}"
    return "cause not confirmed", f"the sentence does not say {shown}"
