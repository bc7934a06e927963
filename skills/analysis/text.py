"""Shared text utilities: tokens, stopwords, keywords, numbers, negation.

One place for the small NLP every skill needs, so the planner, the ranker, the
follow-up check and the stance judge agree on what a "keyword" is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "NEGATIONS",
    "STOPWORDS",
    "keywords",
    "numbers",
    "stem",
    "tokens",
    "words",
]

_WORD = re.compile(r"[A-Za-z0-9]+(?:[.,'][A-Za-z0-9]+)*")
_NUMBER = re.compile(r"(?<![A-Za-z0-9])[0-9]+(?:[.,][0-9]+)*")

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don shouldn isn wasn weren hasn haven hadn doesn didn won
    wouldn couldn mustn needn shan ll re ve d m o y ain ma many much may might must shall
    one per via upon yet ever even still thus hence whether though although however within
    without since according said says say claim claims claimed
    """.split()
)

NEGATIONS: frozenset[str] = frozenset(
    """
    not no never none nobody nothing neither nor cannot can't don't doesn't didn't isn't
    aren't wasn't weren't won't wouldn't shouldn't couldn't hasn't haven't hadn't without
    lack lacks lacking fails failed fail deny denies denied false myth
    """.split()
)


# Words of any script, for text with no ASCII word at all (a claim in Japanese or
# Arabic); text with ASCII words keeps the ASCII tokens the judge was tuned on.
_ANY_WORD = re.compile(r"[^\W_]+(?:[.,'][^\W_]+)*")


def words(text: str) -> list[str]:
    """Word tokens in their original case (numbers keep inner dots and commas)."""
    found: list[str] = _WORD.findall(text)
    if not found and not text.isascii():
        found = _ANY_WORD.findall(text)
    return found


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [w.lower() for w in words(text)]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light, deterministic suffix stripper: ``landed``, ``landing`` -> ``land``;
    ``increase``, ``increases``, ``increasing`` -> ``increas`` (a final ``e`` is dropped
    so inflected and bare forms meet)."""
    w = word.lower()
    if len(w) <= 3 or w[0].isdigit():
        return w
    base = w
    for suffix, repl in (
        ("ational", "ate"), ("ization", "ize"), ("iveness", "ive"), ("fulness", "ful"),
        ("ousness", "ous"), ("ies", "y"), ("ied", "y"), ("ing", ""), ("edly", ""),
        ("ed", ""), ("ly", ""), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"),
        ("ss", "ss"), ("us", "us"), ("is", "is"), ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            base = w[: len(w) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2] \
                    and base[-1] not in "lsz":
                base = base[:-1]  # "stopped" -> "stop", not "stopp"
            break
    if len(base) > 3 and base.endswith("e"):
        base = base[:-1]
    return base


def keywords(text: str, *, extra_stop: Iterable[str] = ()) -> list[str]:
    """Content words of ``text``, lower-cased, de-duplicated, in order of appearance."""
    stop = STOPWORDS | frozenset(extra_stop)
    seen: set[str] = set()
    out: list[str] = []
    for tok in tokens(text):
        if tok in stop or (len(tok) < 2 and not tok.isdigit()) or tok in seen:
            continue
        seen.add(tok)
        out.append(tok)
    return out


def numbers(text: str) -> list[str]:
    """Numbers as written (``1969``, ``1.5``, ``10,000``), commas removed, in order."""
    return [n.replace(",", "") for n in _NUMBER.findall(text)]
