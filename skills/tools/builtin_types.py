"""The built-in evidence tools' parameter and result models: what each tool takes and
answers, validated by the executor.

Their own module because they are the tools' contract, shared by the handlers over the
index (:mod:`.builtin`, which re-exports every name) and by the HTTP sources that answer
as the same tools (:mod:`.http.route`); neither needs the other's code for it.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from claimfsm.skills.tools.documents import Fact, Hit, Source

__all__ = [
    "ExtractedSentence",
    "KbLookupParams",
    "KbLookupResult",
    "PageFetchParams",
    "PageFetchResult",
    "RankParams",
    "RankResult",
    "RankedDoc",
    "SearchParams",
    "SearchResult",
    "SentenceExtractParams",
    "SentenceExtractResult",
    "WebSearchParams",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")


Query = Field(min_length=1, max_length=500)
Limit = Field(default=5, ge=1, le=50)


class SearchParams(_Model):
    """``search``: a query, a result limit and the one source to search."""

    q: str = Query
    lim: int = Limit
    src: Source


class WebSearchParams(_Model):
    """``web_search``: a query and a result limit; every source is searched."""

    q: str = Query
    lim: int = Limit


class SearchResult(_Model):
    """Hits, best first."""

    hits: tuple[Hit, ...]


class KbLookupParams(_Model):
    """``kb_lookup``: a query and a result limit over the knowledge base."""

    q: str = Query
    lim: int = Limit
    src: Literal["kb"] = "kb"


class KbLookupResult(_Model):
    """Facts, best first."""

    facts: tuple[Fact, ...]


class PageFetchParams(_Model):
    """``page_fetch``: the document to read."""

    doc_id: str = Field(min_length=1, max_length=500)


class PageFetchResult(_Model):
    """The whole document."""

    doc_id: str
    title: str
    source: Source
    text: str


class SentenceExtractParams(_Model):
    """``sentence_extract``: a document, the query to rank its sentences by, a limit."""

    doc_id: str = Field(min_length=1, max_length=500)
    q: str = Query
    lim: int = Limit


class ExtractedSentence(_Model):
    """One ranked sentence; ``id`` is ``"{doc_id}#{idx}"`` (``idx`` counts from 0)."""

    id: str
    idx: int
    text: str
    score: float


class SentenceExtractResult(_Model):
    """The document's best sentences for the query, best first."""

    doc_id: str
    sentences: tuple[ExtractedSentence, ...]


class RankParams(_Model):
    """``rank``: a query and the candidate documents to order against it."""

    q: str = Query
    doc_ids: tuple[str, ...] = Field(min_length=1, max_length=200)
    lim: int = Field(default=50, ge=1, le=200)


class RankedDoc(_Model):
    """One candidate and its fused score (higher is better; 0.0: matched by no ranker)."""

    doc_id: str
    score: float


class RankResult(_Model):
    """The candidates known to the index, best first, at most ``lim``; ``dense`` says
    whether cosine similarity took part (the index has vectors) or BM25 ranked alone."""

    ranked: tuple[RankedDoc, ...]
    dense: bool = False
