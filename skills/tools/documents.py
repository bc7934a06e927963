"""The evidence index's records: documents, knowledge-base facts and search hits.

Plain frozen models with no database behind them, so ingest, the tools and the index
share one definition (``claimfsm.skills.tools.index`` re-exports them).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from claimfsm._base.models import Frozen

__all__ = ["SOURCES", "Document", "Fact", "Hit", "Source"]

Source = Literal["wiki", "web", "news"]
SOURCES: tuple[Source, ...] = ("wiki", "web", "news")


class Document(Frozen):
    """One indexed document (for the Climate-FEVER corpus, one Wikipedia sentence)."""

    doc_id: str = Field(min_length=1)
    title: str
    text: str
    source: Source = "wiki"


class Fact(Frozen):
    """One knowledge-base triple."""

    id: str = Field(min_length=1)
    subject: str
    relation: str
    object: str
    source: str = Field(default="kb", min_length=1)


class Hit(Frozen):
    """One search result; ``score`` is ``-bm25`` rounded to 6 places (higher is better),
    or, when the index has dense vectors, the reciprocal-rank fusion of BM25 and cosine."""

    doc_id: str
    title: str
    source: Source
    score: float
    snippet: str
