"""The built-in tools with the configured sources routed to their HTTP backends.

``search`` for a configured source asks that backend; for any other source the index.
``web_search`` (every source) interleaves the index's hits with each backend's, rank by
rank, in source-name order (their scores are not comparable; the rank is); the backends
are asked at the same time. ``page_fetch``
and ``sentence_extract`` of a backend's document (``"wiki|Apollo 11"``) read its page;
``rank`` orders the index's candidates as before and a backend's by the share of the
query's terms in their title and text (the pages read at the same time), both scaled to
[0, 1] and merged by score.
A backend failure is raised as the tool error it is (``HTTP_*``), which the executor
records as a failed call with that code, like every other tool failure.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.builtin_types import (
    ExtractedSentence,
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
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.documents import Document, Hit
from claimfsm.skills.tools.http.backends import Backend, backend_for, split_id
from claimfsm.skills.tools.http.config import SourceConfig
from claimfsm.skills.tools.index import EvidenceIndex, query_terms

__all__ = ["backends_of", "routed_tools"]

Handler = Callable[..., ToolResult[Any]]

#: Pages ``rank`` reads from the backends at once (each answer is cached, so the
#: ``page_fetch`` and ``sentence_extract`` that follow read them from memory).
_FETCHES = 8


def backends_of(sources: Mapping[str, SourceConfig]) -> dict[str, Backend]:
    """One backend per configured source."""
    return {name: backend_for(name, config)  # type: ignore[arg-type]
            for name, config in sorted(sources.items())}


def _interleave(lists: list[list[Hit]], lim: int) -> list[Hit]:
    out: dict[str, Hit] = {}
    for rank in range(max((len(x) for x in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].doc_id not in out:
                out[hits[rank].doc_id] = hits[rank]
    return list(out.values())[:lim]


def _each_backend(backends: Mapping[str, Backend], q: str, lim: int) -> list[list[Hit]]:
    """Every backend's hits for ``q``, in source-name order, the backends asked at the
    same time (a search of every source waits for the slowest, not the sum); a failure
    is raised as the first in name order would have been."""
    named = sorted(backends.items())
    if len(named) <= 1:
        return [b.search(q, lim) for _, b in named]
    with ThreadPoolExecutor(len(named), thread_name_prefix="claimfsm-backend") as pool:
        asked = [pool.submit(contextvars.copy_context().run, b.search, q, lim)
                 for _, b in named]
        return [f.result() for f in asked]


def _coverage(q: str, doc: Document | None) -> float:
    terms = query_terms(q)
    if doc is None or not terms:
        return 0.0
    have = set(query_terms(f"{doc.title} {doc.text}"))
    return round(sum(t in have for t in terms) / len(terms), 6)


class _Router:
    def __init__(self, index: EvidenceIndex, backends: Mapping[str, Backend],
                 builtin: Mapping[str, Handler]) -> None:
        self.index = index
        self.backends = backends
        self.builtin = builtin

    def backend_doc(self, doc_id: str) -> tuple[bool, Document | None]:
        """Whether ``doc_id`` is a backend's, and its page."""
        parts = split_id(doc_id)
        if parts is None or parts[0] not in self.backends:
            return False, None
        return True, self.backends[parts[0]].fetch(parts[1])

    def search(self, params: SearchParams, *, context: ToolContext) -> ToolResult[Any]:
        backend = self.backends.get(params.src)
        if backend is None:
            return self.builtin["search"](params, context=context)
        hits = backend.search(params.q, params.lim)
        return ToolResult.ok(SearchResult(hits=tuple(hits)),
                             f"{len(hits)} hit{'' if len(hits) == 1 else 's'} in {params.src}")

    def web_search(self, params: WebSearchParams, *, context: ToolContext) -> ToolResult[Any]:
        local = self.builtin["web_search"](params, context=context)
        if not local.success:
            return local
        lists = [list(local.value.hits)] if local.value is not None else []
        lists += _each_backend(self.backends, params.q, params.lim)
        hits = _interleave(lists, params.lim)
        return ToolResult.ok(SearchResult(hits=tuple(hits)),
                             f"{len(hits)} hit{'' if len(hits) == 1 else 's'} in all sources")

    def page_fetch(self, params: PageFetchParams, *, context: ToolContext) -> ToolResult[Any]:
        routed, doc = self.backend_doc(params.doc_id)
        if not routed:
            return self.builtin["page_fetch"](params, context=context)
        if doc is None:
            return ToolResult.error(f"doc_id: no page {params.doc_id!r} at its backend",
                                    code="NOT_FOUND")
        return ToolResult.ok(PageFetchResult(doc_id=doc.doc_id, title=doc.title,
                                             source=doc.source, text=doc.text),
                             f"fetched {doc.doc_id}")

    def sentence_extract(self, params: SentenceExtractParams, *,
                         context: ToolContext) -> ToolResult[Any]:
        routed, doc = self.backend_doc(params.doc_id)
        if not routed:
            return self.builtin["sentence_extract"](params, context=context)
        if doc is None:
            return ToolResult.error(f"doc_id: no page {params.doc_id!r} at its backend",
                                    code="NOT_FOUND")
        return _one_page(doc, params)

    def rank(self, params: RankParams, *, context: ToolContext) -> ToolResult[Any]:
        remote = [d for d in dict.fromkeys(params.doc_ids) if self.backend_doc_id(d)]
        local_ids = tuple(d for d in dict.fromkeys(params.doc_ids) if d not in remote)
        scores: dict[str, float] = {}
        dense = False
        if local_ids:
            got = self.builtin["rank"](params.model_copy(update={"doc_ids": local_ids}),
                                       context=context)
            if not got.success or got.value is None:
                return got
            dense = got.value.dense
            top = max((r.score for r in got.value.ranked), default=0.0)
            scores = {r.doc_id: round(r.score / top, 6) if top > 0 else 0.0
                      for r in got.value.ranked}
        for doc_id, doc in zip(remote, self._pages(remote), strict=True):
            scores[doc_id] = _coverage(params.q, doc)
        order = list(params.doc_ids)
        best = sorted(scores, key=lambda d: (-scores[d], order.index(d)))[: params.lim]
        ranked = tuple(RankedDoc(doc_id=d, score=scores[d]) for d in best)
        return ToolResult.ok(RankResult(ranked=ranked, dense=dense),
                             f"{len(ranked)} document{'' if len(ranked) == 1 else 's'} ranked")

    def _pages(self, doc_ids: list[str]) -> list[Document | None]:
        """The backends' pages of ``doc_ids``, read at the same time (``_FETCHES`` at
        once); a failure is raised as the first in order would have been."""
        if len(doc_ids) <= 1:
            return [self.backend_doc(d)[1] for d in doc_ids]
        with ThreadPoolExecutor(min(_FETCHES, len(doc_ids)),
                                thread_name_prefix="claimfsm-backend") as pool:
            asked = [pool.submit(contextvars.copy_context().run, self.backend_doc, d)
                     for d in doc_ids]
            return [f.result()[1] for f in asked]

    def backend_doc_id(self, doc_id: str) -> bool:
        parts = split_id(doc_id)
        return parts is not None and parts[0] in self.backends


def _one_page(doc: Document, params: SentenceExtractParams) -> ToolResult[Any]:
    # The index's tool ranks the sentences the same way; its handler reads the index only.
    from claimfsm.skills.tools.sentences import rank_sentences, split_sentences

    ranked = rank_sentences(split_sentences(doc.text), params.q, lim=params.lim)
    sentences = tuple(ExtractedSentence(id=f"{doc.doc_id}#{r.idx}", idx=r.idx, text=r.text,
                                        score=r.score) for r in ranked)
    return ToolResult.ok(SentenceExtractResult(doc_id=doc.doc_id, sentences=sentences),
                         f"{len(sentences)} sentence{'' if len(sentences) == 1 else 's'} "
                         f"from {doc.doc_id}")


def routed_tools(index: EvidenceIndex,
                 backends: Mapping[str, Backend]) -> tuple[Tool[Any, Any], ...]:
    """:func:`~claimfsm.skills.tools.builtin.builtin_tools` of ``index``, with the sources
    of ``backends`` answered by them (no backends: the built-in tools as they are)."""
    tools = builtin_tools(index)
    if not backends:
        return tools
    router = _Router(index, backends, {t.name: t.handler for t in tools})
    routed: dict[str, Handler] = {
        "search": router.search, "web_search": router.web_search,
        "page_fetch": router.page_fetch, "sentence_extract": router.sentence_extract,
        "rank": router.rank,
    }
    return tuple(dataclasses.replace(t, handler=routed[t.name]) if t.name in routed else t
                 for t in tools)
