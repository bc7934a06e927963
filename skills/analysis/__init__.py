"""Claim analysis shared by the skills: text utilities (tokens, stems, keywords,
numbers, negation), the claim splitter, the query-term analysis and source choice of the
Evidence Query Planner, and their word lists.

Pure functions over strings; imports nothing from ``fsm``, ``state`` or the other
skill modules.
"""

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm.skills.analysis.lexicon import (
        AUXILIARIES,
        COMMON_TITLE_WORDS,
        DETERMINERS,
        ED_NOT_VERBS,
        GENERIC_WORDS,
        IRREGULAR_VERBS,
        PLURAL_AUXILIARIES,
        PROGRESSIVE_AUXILIARIES,
        QUERY_NOISE,
        RECENCY_PHRASES,
        SUBJECT_PRONOUNS,
        is_finite_verb,
        is_regular_past,
        word_set,
    )
    from claimfsm.skills.analysis.sources import (
        SOURCES,
        Source,
        choose_lim,
        choose_sources,
        is_commercial_or_personal,
        is_kb_fact,
        is_recent,
    )
    from claimfsm.skills.analysis.split import split_claim
    from claimfsm.skills.analysis.terms import (
        MAX_PHRASE,
        MAX_SPAN,
        Analysis,
        Term,
        TermKind,
        Tok,
        analyse,
        gerund,
    )
    from claimfsm.skills.analysis.text import (
        NEGATIONS,
        STOPWORDS,
        keywords,
        numbers,
        stem,
        tokens,
        words,
    )

__all__ = [
    "AUXILIARIES",
    "COMMON_TITLE_WORDS",
    "DETERMINERS",
    "ED_NOT_VERBS",
    "GENERIC_WORDS",
    "IRREGULAR_VERBS",
    "MAX_PHRASE",
    "MAX_SPAN",
    "NEGATIONS",
    "PLURAL_AUXILIARIES",
    "PROGRESSIVE_AUXILIARIES",
    "QUERY_NOISE",
    "RECENCY_PHRASES",
    "SOURCES",
    "STOPWORDS",
    "SUBJECT_PRONOUNS",
    "Analysis",
    "Source",
    "Term",
    "TermKind",
    "Tok",
    "analyse",
    "choose_lim",
    "choose_sources",
    "gerund",
    "is_commercial_or_personal",
    "is_finite_verb",
    "is_kb_fact",
    "is_recent",
    "is_regular_past",
    "keywords",
    "numbers",
    "split_claim",
    "stem",
    "tokens",
    "word_set",
    "words",
]


# Where each name lives, imported on first use: the tool index needs only ``text``, and
# importing any ``claimfsm.skills.analysis.X`` runs this package first.
_MODULES = {
    "lexicon": (
        "AUXILIARIES", "COMMON_TITLE_WORDS", "DETERMINERS", "ED_NOT_VERBS", "GENERIC_WORDS",
        "IRREGULAR_VERBS", "PLURAL_AUXILIARIES", "PROGRESSIVE_AUXILIARIES", "QUERY_NOISE",
        "RECENCY_PHRASES", "SUBJECT_PRONOUNS", "is_finite_verb", "is_regular_past", "word_set",
    ),
    "sources": (
        "SOURCES", "Source", "choose_lim", "choose_sources", "is_commercial_or_personal",
        "is_kb_fact", "is_recent",
    ),
    "split": (
        "split_claim",
    ),
    "terms": (
        "MAX_PHRASE", "MAX_SPAN", "Analysis", "Term", "TermKind", "Tok", "analyse", "gerund",
    ),
    "text": (
        "NEGATIONS", "STOPWORDS", "keywords", "numbers", "stem", "tokens", "words",
    ),
}
_WHERE = {name: f"claimfsm.skills.analysis.{module}"
          for module, names in _MODULES.items() for name in names}

__getattr__ = lazy_exports(__name__, _WHERE)
