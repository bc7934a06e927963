"""Word lists of the stance judge: directions of change, antonyms, hedges, cues.

Entries are plain words; :func:`term` normalises them the same way it normalises text,
so ``rising``/``rises``/``rise`` all hit the ``rise`` entry. Irregular forms (``rose``,
``fell``, ``grew``) are listed explicitly because no suffix stripper finds them.
"""

from __future__ import annotations

from claimfsm.skills.analysis.text import NEGATIONS, STOPWORDS, stem

__all__ = [
    "ANTONYMS",
    "DIRECTION",
    "EXCLUSIVE",
    "HEDGES",
    "MONTHS",
    "NEGATION_EXCEPTIONS",
    "NEUTRAL_BIGRAMS",
    "ORDINALS",
    "POST_NEGATIONS",
    "PRE_NEGATIONS",
    "is_month",
    "is_name",
    "term",
]

_VOWELS = frozenset("aeiou")


def term(word: str) -> str:
    """A matching key for a word: :func:`claimfsm.skills.analysis.text.stem`, a final ``e`` dropped
    and a final doubled consonant undoubled, so ``increase``/``increased`` and
    ``fall``/``falling`` meet."""
    t = stem(word)
    if len(t) > 3 and t.endswith("e"):
        t = t[:-1]
    if len(t) > 3 and t[-1] == t[-2] and t[-1] not in _VOWELS and not t[-1].isdigit():
        t = t[:-1]
    return t


def _terms(words: str) -> frozenset[str]:
    return frozenset(term(w) for w in words.split())


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_UP = """
increase increases increased increasing rise rises rising rose risen grow grows growing
grew grown growth gain gains gained expand expands expanded expanding expansion higher
warm warms warmed warming warmer accelerate accelerates accelerated accelerating
acceleration strengthen strengthens strengthened strengthening thicken thickening surge
surged soar soared climb climbed climbing intensify intensified intensifying upward
"""
_DOWN = """
decrease decreases decreased decreasing decline declines declined declining fall falls
falling fell fallen drop drops dropped dropping shrink shrinks shrinking shrank shrunk
loss losses lose loses losing lost lower cool cools cooled cooling cooler slow slows
slowed slowing slowdown decelerate decelerating deceleration weaken weakens weakened
weakening thin thinning thinned retreat retreating retreated reduce reduces reduced
reducing reduction diminish diminished diminishing plunge plunged downward
"""

DIRECTION: dict[str, str] = {t: "up" for t in _terms(_UP)} | {t: "down" for t in _terms(_DOWN)}
"""Term -> direction of change (``up`` or ``down``)."""

_PAIRS = """
more:less more:fewer north:south east:west natural:artificial natural:anthropogenic
alive:dead alive:extinct larger:smaller largest:smallest bigger:smaller
biggest:smallest longest:shortest highest:lowest tallest:shortest oldest:youngest
older:younger hottest:coldest hotter:colder hot:cold wet:dry wetter:drier safe:dangerous
legal:illegal possible:impossible accept:reject support:oppose agree:disagree
above:below positive:negative benefit:harm beneficial:harmful stable:unstable
maximum:minimum inner:outer visible:invisible raise:lower raises:lowers advance:retreat
advancing:retreating rare:common rarer:frequent rare:frequent shallow:deep
shallowest:deepest southward:northward worse:better worsen:improve same:different
regular:irregular round:irregular southward:north northward:south
eastward:west westward:east worse:recover worsen:recover
"""


def _antonyms() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for pair in _PAIRS.split():
        a, b = (term(x) for x in pair.split(":"))
        table.setdefault(a, set()).add(b)
        table.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in table.items()}


ANTONYMS: dict[str, frozenset[str]] = _antonyms()
"""Term -> its antonym terms (symmetric)."""

NEUTRAL_BIGRAMS: frozenset[tuple[str, str]] = frozenset({(term("global"), term("warming"))})
"""Two-word names whose words must not count as a direction ("global warming")."""

POST_NEGATIONS: frozenset[str] = _set(
    "false myth myths hoax debunked disproved disproven untrue incorrect wrong unfounded "
    "baseless refuted misconception"
)
"""Cues that deny what comes before them ("the landing was a hoax")."""

PRE_NEGATIONS: frozenset[str] = (NEGATIONS - POST_NEGATIONS) | _set(
    "contrary neither"
)
"""Cues that deny what follows them ("did not land", "never landed")."""

NEGATION_EXCEPTIONS: frozenset[str] = _set(
    "only until just merely doubt surprisingly"
)
"""A word right after a cue that makes it no denial ("not only", "not until")."""

HEDGES: frozenset[str] = _set(
    """may might could possibly perhaps likely unlikely suggest suggests suggested
    uncertain unclear debated controversial alleged allegedly reportedly rumored rumoured
    speculated hypothesized hypothesised believe believes believed supposedly
    purportedly"""
)
"""Words that make a sentence tentative."""

EXCLUSIVE: frozenset[str] = _terms(
    """capital largest smallest biggest highest tallest longest deepest oldest first
    founder founded born author wrote written invented inventor discovered discoverer
    located president"""
)
"""Relations with one right answer: a different name there contradicts the claim."""

ORDINALS: frozenset[str] = _set(
    "second third fourth fifth sixth seventh eighth ninth tenth next"
)
"""Ranks that qualify an exclusive relation ("second largest")."""

MONTHS: frozenset[str] = _set(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec"""
)
"""Month names: a small number next to one is a day, not a quantity."""


def is_month(word: str) -> bool:
    """A month name; "may" counts only when written "May" (else it is a hedge)."""
    return word.lower() in MONTHS and (word.lower() != "may" or word == "May")


def is_name(word: str) -> bool:
    """A capitalised word that can carry a number as part of a name ("Apollo" in
    "Apollo 13"), not a month ("July 20") and not a capitalised function word ("In 1969")."""
    return (word[:1].isupper() and word.isalpha() and not is_month(word)
            and word.lower() not in STOPWORDS)
