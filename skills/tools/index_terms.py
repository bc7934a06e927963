"""How user text becomes an evidence query, and a hit's snippet.

Its own module because both evidence indexes (SQLite FTS5 here, PostgreSQL in
:mod:`.index_pg`) turn a claim into the same terms and cut the same snippets, and
neither needs the other's code for it. User text never reaches FTS5 as query syntax:
:func:`fts_query` tokenises it and quotes every term. :mod:`.index` re-exports the
public names.
"""

from __future__ import annotations

import unicodedata

from claimfsm.skills.analysis.text import STOPWORDS, tokens

__all__ = ["SNIPPET_CHARS", "TITLE_WEIGHT", "fts_query", "query_terms"]

TITLE_WEIGHT = 2.0
"""bm25 column weight of the title against 1.0 for the text: a hit in the title counts more."""
SNIPPET_CHARS = 200
_MAX_TERMS = 64  # bounds the OR-query a 500-character claim can produce


def query_terms(q: str) -> list[str]:
    """The distinct search terms of ``q``: lower-cased tokens, stopwords dropped unless
    nothing else remains, diacritics folded (``café`` -> ``cafe``), at most 64."""
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", q) if not unicodedata.combining(c)
    )
    toks = list(dict.fromkeys(tokens(folded)))
    content = [t for t in toks if t not in STOPWORDS]
    return (content or toks)[:_MAX_TERMS]


def fts_query(q: str) -> str:
    """An FTS5 MATCH expression that can only mean "any of these terms": each term is
    quoted as an FTS5 string (inner quotes doubled), joined with ``OR``. Empty if ``q``
    has no terms."""
    return _or_query(query_terms(q))


def _or_query(terms: list[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text[:SNIPPET_CHARS]
    space = cut.rfind(" ")
    if space > SNIPPET_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"
