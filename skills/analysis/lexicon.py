"""Closed word lists the claim splitter and the query planner share.

Kept as data in one place so that what counts as a verb, a determiner or an everyday
word is the same for ``parse_claim`` (where to split) and ``evidence_query_plan``
(which term is the predicate, which capitalised word is ambiguous as a title).
"""

from __future__ import annotations

__all__ = [
    "AUXILIARIES",
    "COMMON_TITLE_WORDS",
    "DETERMINERS",
    "ED_NOT_VERBS",
    "GENERIC_WORDS",
    "IRREGULAR_VERBS",
    "PLURAL_AUXILIARIES",
    "PROGRESSIVE_AUXILIARIES",
    "QUERY_NOISE",
    "RECENCY_PHRASES",
    "SUBJECT_PRONOUNS",
    "is_finite_verb",
    "is_regular_past",
    "word_set",
]


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` as a set (word lists stay readable)."""
    return frozenset(text.split())

AUXILIARIES: frozenset[str] = word_set(
    """
    is are was were am be been being has have had will would can could shall should may
    might must did does do
    """
)

PLURAL_AUXILIARIES: frozenset[str] = frozenset({"are", "were", "have", "do"})

PROGRESSIVE_AUXILIARIES: frozenset[str] = word_set("is are was were am be been")

# Past tenses and participles that do not end in -ed; matched as written because
# sentences say "won", not "winning", and BM25 matches surface forms.
IRREGULAR_VERBS: frozenset[str] = word_set(
    """
    won lost wrote written built made took taken became become began begun born led left
    gave given held ran sold saw seen went gone came bought brought caught chose chosen
    drove driven fell fought flew grew grown kept knew known met paid rose sang sung sank
    sent shot spoke spoken spent stood stole struck swam taught thought threw told
    understood wore broke broken beat beaten bore drew drawn ate eaten forgot froze hid
    hung lent meant rode rang shook shone slept stuck swore swept tore woke wept sat fled
    """
)

# Words ending in -ed that are not verb forms.
ED_NOT_VERBS: frozenset[str] = word_set(
    """
    hundred red bed shed need seed speed feed deed indeed sacred naked wicked kindred rugged
    ragged jagged beloved wretched crooked dogged breed greed creed weed steed tweed bleed
    embed united sled aged naked
    """
)

DETERMINERS: frozenset[str] = word_set(
    "a an the this these those its his her their our my your some every each"
)

SUBJECT_PRONOUNS: frozenset[str] = frozenset({"he", "she", "it", "they"})

# Function-like words that carry no retrievable meaning in a search query.
QUERY_NOISE: frozenset[str] = word_set(
    """
    toward towards among across along amid onto like just never none nobody nothing neither
    cannot really actually
    """
)

# Content words that rarely decide what a claim is about: packed last, dropped first.
GENERIC_WORDS: frozenset[str] = word_set(
    """
    percent cent number numbers amount part lot lots way ways time times thing things kind
    type people around nearly almost approximately roughly due well etc year years today
    tonight yesterday recently recent latest currently now week month mainly largely mostly
    primarily partly entirely slightly scientists experts researchers officials
    """
)

RECENCY_PHRASES: tuple[str, ...] = (
    "recently", "recent", "yesterday", "today", "tonight", "latest", "this week",
    "this month", "this year", "last week", "last month", "last night", "last year",
    "this morning",
)

# Everyday English words (mostly verbs and adjectives) that are also well-known titles:
# a claim whose main entity is one of these alone is ambiguous ("Lost", "Heat", "Big").
COMMON_TITLE_WORDS: frozenset[str] = word_set(
    """
    lost heat big up cars friends frozen gravity signs jaws speed crash glee house lucky
    happy fame rush thriller bad help dark heroes weeds alien aliens arrival brave cold
    control fight fire free gone grease home hook hustle insider joy madness mother rain
    red roots run scream seven shine sing smile split taken thunder torn unbroken war
    wanted wild believe creep hurt hello imagine jump perfect rent hair wicked legend
    survivor suits scrubs community bones castle angel misery closer crazy money
    """
)


def is_regular_past(lower: str) -> bool:
    """``landed``, ``founded``: a regular past form (not ``hundred``, not ``used``)."""
    return lower.endswith("ed") and len(lower) >= 4 and lower not in ED_NOT_VERBS


def is_finite_verb(lower: str, prev_lower: str | None) -> bool:
    """Whether a token can head a predicate: an auxiliary, an irregular past form, or a
    regular past form not used as an adjective after a determiner (``the united team``)."""
    if lower in AUXILIARIES:
        return True
    if prev_lower in DETERMINERS:
        return False
    return lower in IRREGULAR_VERBS or is_regular_past(lower)
