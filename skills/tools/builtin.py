"""The built-in evidence tools over an :class:`EvidenceIndex`.

``search`` (one source), ``web_search`` (every source; the executor's fallback for a
rate-limited ``search``), ``kb_lookup``, ``page_fetch`` and ``sentence_extract``. Handlers
are deterministic and never raise for bad data: an unknown document is ``NOT_FOUND``, a
database failure is ``INDEX_ERROR``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from claimfsm.skills.tools.builtin_types import (
    ExtractedSentence,
    KbLookupParams,
    KbLookupResult,
    PageFetchParams,
    PageFetchResult,
    RankedDoc,
    RankParams,
    RankResult,
    SearchParams,
    SearchResult,
    SentenceExtractParams,
    SentenceExtractResult,
    WebSearchParams,
)
from claimfsm.skills.tools.core import Tool, ToolContext, ToolExample, ToolResult
from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact, Hit
from claimfsm.skills.tools.sentences import rank_sentences, split_sentences

__all__ = [
    "RETRIEVAL_RESOURCE",
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
    "builtin_tools",
]


RETRIEVAL_RESOURCE = "retrieval"
"""The per-session resource naming the session's retrieval: ``lexical`` or ``hybrid``."""


def _guarded(fn: Callable[[], ToolResult[Any]]) -> ToolResult[Any]:
    # A locked or corrupt database file is an expected runtime failure, not a crash.
    try:
        return fn()
    except sqlite3.Error as exc:
        return ToolResult.error(f"index: {exc}", code="INDEX_ERROR")


def _dense(context: ToolContext) -> bool | None:
    # The session's retrieval profile reaches the tools as a per-session resource:
    # "lexical" keeps BM25 alone on an index that has vectors; no resource (sessions from
    # before profiles): use the vectors whenever the index has them.
    mode = context.resources.get(RETRIEVAL_RESOURCE)
    return None if mode is None else mode == "hybrid"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _search_tool(index: EvidenceIndex) -> Tool[SearchParams, SearchResult]:
    def handle(params: SearchParams, *, context: ToolContext) -> ToolResult[SearchResult]:
        def run() -> ToolResult[SearchResult]:
            hits = index.search(params.q, lim=params.lim, src=params.src, dense=_dense(context))
            return ToolResult.ok(
                SearchResult(hits=tuple(hits)), _plural(len(hits), "hit") + f" in {params.src}"
            )

        return _guarded(run)

    example = ToolExample(
        description="Search Wikipedia for the Moon landing.",
        input=SearchParams.model_construct(q="NASA Moon landing 1969", lim=4, src="wiki"),
        output=SearchResult.model_construct(hits=(_EXAMPLE_HIT,)),
    )
    return Tool(
        name="search",
        description="Full-text search (BM25) of one evidence source: wiki, web or news.",
        params=SearchParams, result=SearchResult, handler=handle, examples=(example,),
    )


def _web_search_tool(index: EvidenceIndex) -> Tool[WebSearchParams, SearchResult]:
    def handle(params: WebSearchParams, *, context: ToolContext) -> ToolResult[SearchResult]:
        def run() -> ToolResult[SearchResult]:
            hits = index.search(params.q, lim=params.lim, src=None, dense=_dense(context))
            return ToolResult.ok(
                SearchResult(hits=tuple(hits)), _plural(len(hits), "hit") + " in all sources"
            )

        return _guarded(run)

    example = ToolExample(
        description="Search every source (the fallback for a rate-limited search).",
        input=WebSearchParams.model_construct(q="NASA Moon landing 1969", lim=4),
        output=SearchResult.model_construct(hits=(_EXAMPLE_HIT,)),
    )
    return Tool(
        name="web_search",
        description="Full-text search (BM25) across every evidence source.",
        params=WebSearchParams, result=SearchResult, handler=handle, examples=(example,),
    )


def _kb_lookup_tool(index: EvidenceIndex) -> Tool[KbLookupParams, KbLookupResult]:
    def handle(params: KbLookupParams, *, context: ToolContext) -> ToolResult[KbLookupResult]:
        def run() -> ToolResult[KbLookupResult]:
            facts = index.kb_lookup(params.q, lim=params.lim)
            return ToolResult.ok(KbLookupResult(facts=tuple(facts)), _plural(len(facts), "fact"))

        return _guarded(run)

    example = ToolExample(
        description="Look up knowledge-base facts about Apollo 11.",
        input=KbLookupParams.model_construct(q="Apollo 11 landing date", lim=3),
        output=KbLookupResult.model_construct(facts=(
            Fact.model_construct(id="f1", subject="Apollo 11", relation="landing date",
                                 object="1969-07-20"),
        )),
    )
    return Tool(
        name="kb_lookup",
        description="Look up subject-relation-object facts in the knowledge base.",
        params=KbLookupParams, result=KbLookupResult, handler=handle, examples=(example,),
    )


def _page_fetch_tool(index: EvidenceIndex) -> Tool[PageFetchParams, PageFetchResult]:
    def handle(params: PageFetchParams, *, context: ToolContext) -> ToolResult[PageFetchResult]:
        def run() -> ToolResult[PageFetchResult]:
            doc = index.get_document(params.doc_id)
            if doc is None:
                return _not_found(params.doc_id)
            return ToolResult.ok(
                PageFetchResult(doc_id=doc.doc_id, title=doc.title, source=doc.source,
                                text=doc.text),
                f"fetched {doc.doc_id}",
            )

        return _guarded(run)

    example = ToolExample(
        description="Fetch the full text of a search hit.",
        input=PageFetchParams.model_construct(doc_id=_EXAMPLE_DOC.doc_id),
        output=PageFetchResult.model_construct(**dict(_EXAMPLE_DOC)),
    )
    return Tool(
        name="page_fetch",
        description="Fetch a document's full text by doc_id.",
        params=PageFetchParams, result=PageFetchResult, handler=handle, examples=(example,),
    )


def _sentence_extract_tool(
    index: EvidenceIndex,
) -> Tool[SentenceExtractParams, SentenceExtractResult]:
    def handle(
        params: SentenceExtractParams, *, context: ToolContext
    ) -> ToolResult[SentenceExtractResult]:
        def run() -> ToolResult[SentenceExtractResult]:
            doc = index.get_document(params.doc_id)
            if doc is None:
                return _not_found(params.doc_id)
            ranked = rank_sentences(split_sentences(doc.text), params.q, lim=params.lim)
            sentences = tuple(
                ExtractedSentence(id=f"{doc.doc_id}#{r.idx}", idx=r.idx, text=r.text,
                                  score=r.score)
                for r in ranked
            )
            return ToolResult.ok(
                SentenceExtractResult(doc_id=doc.doc_id, sentences=sentences),
                _plural(len(sentences), "sentence") + f" from {doc.doc_id}",
            )

        return _guarded(run)

    example = ToolExample(
        description="Extract the sentences of a fetched page that bear on the claim.",
        input=SentenceExtractParams.model_construct(doc_id=_EXAMPLE_DOC.doc_id,
                                                    q="Moon landing 1969", lim=2),
        output=SentenceExtractResult.model_construct(doc_id=_EXAMPLE_DOC.doc_id, sentences=(
            ExtractedSentence.model_construct(id=f"{_EXAMPLE_DOC.doc_id}#0", idx=0,
                                              text=split_sentences(_EXAMPLE_DOC.text)[0],
                                              score=2.1),
        )),
    )
    return Tool(
        name="sentence_extract",
        description="Split a document into sentences and rank them against a query.",
        params=SentenceExtractParams, result=SentenceExtractResult, handler=handle,
        examples=(example,),
    )


def _rank_tool(index: EvidenceIndex) -> Tool[RankParams, RankResult]:
    def handle(params: RankParams, *, context: ToolContext) -> ToolResult[RankResult]:
        def run() -> ToolResult[RankResult]:
            dense = _dense(context)
            ranked = index.rank_documents(params.q, params.doc_ids, dense=dense)[: params.lim]
            docs = tuple(RankedDoc(doc_id=d, score=s) for d, s in ranked)
            used = dense is not False and index.dense.active()
            return ToolResult.ok(RankResult(ranked=docs, dense=used),
                                 _plural(len(docs), "document") + " ranked")

        return _guarded(run)

    example = ToolExample(
        description="Order a subclaim's candidate documents against the subclaim.",
        input=RankParams.model_construct(q="Apollo 11 landed on the Moon in 1969",
                                         doc_ids=("Apollo 11:0",)),
        output=RankResult.model_construct(ranked=(
            RankedDoc.model_construct(doc_id="Apollo 11:0", score=0.047619),)),
    )
    return Tool(
        name="rank",
        description="Rank candidate documents against a query: BM25 over the whole index, "
        "fused with dense cosine similarity when the index has vectors.",
        params=RankParams, result=RankResult, handler=handle, examples=(example,),
    )


def _not_found(doc_id: str) -> ToolResult[Any]:
    return ToolResult.error(f"doc_id: no document {doc_id!r} in the index", code="NOT_FOUND")


_EXAMPLE_DOC = Document.model_construct(
    doc_id="Apollo 11:0",
    title="Apollo 11",
    source="wiki",
    text="Apollo 11 was the American spaceflight that first landed humans on the Moon. "
    "Commander Neil Armstrong and pilot Buzz Aldrin landed on July 20, 1969.",
)
_EXAMPLE_HIT = Hit.model_construct(
    doc_id=_EXAMPLE_DOC.doc_id, title=_EXAMPLE_DOC.title, source="wiki", score=7.25,
    snippet=_EXAMPLE_DOC.text[:120],
)


def builtin_tools(index: EvidenceIndex) -> tuple[Tool[Any, Any], ...]:
    """The built-in tools, their handlers bound to ``index``, in a fixed order."""
    return (
        _search_tool(index),
        _web_search_tool(index),
        _kb_lookup_tool(index),
        _page_fetch_tool(index),
        _sentence_extract_tool(index),
        _rank_tool(index),
    )
