"""Where a text's terms are, for matching a claim's key terms in one pass of lookups.

:func:`close` says when two terms are the same word ("australia"/"australian");
:class:`TermIndex` is built once per analysed text and finds every token a claim term
matches (the same term, a close extension, an antonym, or any direction word for a
direction word), which :func:`claimfsm.skills.stance.features.coverage` reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from claimfsm.skills.stance.lexicon import ANTONYMS, DIRECTION

__all__ = ["TermIndex", "close"]

# ``close`` extends only terms of at least this many letters, so two terms it matches
# share their first ``_PREFIX`` letters.
_PREFIX = 5


def close(a: str, b: str) -> bool:
    """Same term, or one a short extension of the other ("australia"/"australian")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return (len(short) >= _PREFIX and long_.startswith(short)
            and len(long_) - len(short) <= 2 and long_.isalpha())


@dataclass(frozen=True, eq=False)
class TermIndex:
    """Token positions by term, terms by their first five letters, and the positions of
    direction words."""

    at: dict[str, tuple[int, ...]]
    by_prefix: dict[str, tuple[str, ...]]
    direction: tuple[int, ...]
    terms: frozenset[str]

    @classmethod
    def of(cls, terms: Iterable[str]) -> TermIndex:
        """The index of a text's token terms, in token order."""
        at: dict[str, list[int]] = {}
        for i, term in enumerate(terms):
            at.setdefault(term, []).append(i)
        by_prefix: dict[str, list[str]] = {}
        for t in at:
            if len(t) >= _PREFIX:
                by_prefix.setdefault(t[:_PREFIX], []).append(t)
        return cls(at={t: tuple(p) for t, p in at.items()},
                   by_prefix={k: tuple(v) for k, v in by_prefix.items()},
                   direction=tuple(i for t, p in at.items() if t in DIRECTION for i in p),
                   terms=frozenset(at))

    def hits(self, ct: str) -> set[int]:
        """Positions of every token claim term ``ct`` matches: the same or a close term,
        an antonym, or (for a direction word) any direction word."""
        hits = set(self.at.get(ct, ()))
        if len(ct) >= _PREFIX:
            for t in self.by_prefix.get(ct[:_PREFIX], ()):
                if t != ct and close(ct, t):
                    hits.update(self.at[t])
        if ct in DIRECTION:
            hits.update(self.direction)
        for t in ANTONYMS.get(ct, ()):
            hits.update(self.at.get(t, ()))
        return hits
