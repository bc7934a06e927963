"""EXTRACT: rank the candidate documents, read the best, rank evidence sentences per subclaim.

For each subclaim the skill

1. with ``rank`` set, ranks every distinct document its retrieval found against the whole
   subclaim with one ``rank`` call (BM25 with the index's own statistics, fused with
   dense cosine when the index has vectors; the planner's short queries found the pool,
   the subclaim orders it); otherwise, or if ``rank`` fails, the hits' score order stands;
2. reads the best ``docs_per_claim`` of them: ``page_fetch`` then ``sentence_extract``
   (fetch before extract, each document fetched at most once per call);
3. adds the knowledge-base facts retrieved for it (as sentences "subject relation object");
4. scores every sentence's key-term coverage (``score``,
   :func:`claimfsm.skills.stance.lexical.relevance`), drops those sharing no key term,
   orders the rest by ``rank``: the reciprocal-rank fusion of the coverage order and the
   document order of step 1, and keeps the best ``per_claim``.

A failed tool call skips that document and is listed in ``skipped``; it never aborts the
step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext, ToolCaller
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_LIST, MAX_SENTENCE_CHARS, MAX_SUBCLAIMS
from claimfsm.skills.stance.lexical import relevance
from claimfsm.skills.tools.vectors import rrf
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = [
    "SKILL",
    "Claim",
    "EvidenceItem",
    "Fact",
    "Hit",
    "Input",
    "Output",
    "Skipped",
    "handler",
]

NEXT = "VERIFY"
FOLLOW_UP = "RETRIEVAL"
_MIN_KEEP = 0.0
"""A sentence must score above this (share no key term at all -> dropped)."""
_MAX_RANK = 200  # the rank tool's candidate limit


class Claim(BaseIO):
    """A subclaim: id and text."""

    id: str = Field(min_length=1, max_length=64)
    c: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS)


class Hit(BaseIO):
    """One retrieval result for subclaim ``for``, in rank order."""

    for_: str = Field(alias="for", min_length=1)
    doc_id: str = Field(min_length=1)
    title: str = ""
    source: str = "web"
    score: float = 0.0


class Fact(BaseIO):
    """A knowledge-base fact retrieved for subclaim ``for``."""

    for_: str = Field(alias="for", min_length=1)
    id: str = Field(min_length=1)
    subject: str
    relation: str
    object: str
    source: str = "kb"


class EvidenceItem(BaseIO):
    """One evidence sentence: id (``doc#idx`` or the fact id), where from, how relevant
    (``score``: the share of the subclaim's key terms it covers) and where it ranks
    (``rank``: higher first; the list is ordered by it)."""

    id: str
    doc_id: str
    text: str = Field(max_length=MAX_SENTENCE_CHARS)
    source: str
    score: float
    rank: float = 0.0


class Skipped(BaseIO):
    """A document left out because a tool call failed."""

    doc_id: str
    tool: str
    code: str


class Input(BaseIO):
    """Subclaims, their hits and facts, and the follow-up round counters."""

    claims: list[Claim] = Field(max_length=MAX_SUBCLAIMS)
    hits: list[Hit] = Field(default_factory=list, max_length=MAX_LIST)
    facts: list[Fact] = Field(default_factory=list, max_length=MAX_LIST)
    round: int = Field(0, ge=0)
    max_rounds: int = Field(1, ge=0)
    docs_per_claim: int = Field(3, ge=1)
    per_claim: int = Field(5, ge=1)
    rank: bool = False
    """Rank the whole candidate pool with the ``rank`` tool before reading (session config
    ``rank``); otherwise the hits' own order decides which documents are read."""
    min_best: float = Field(0.0, ge=0, le=1)
    """A subclaim whose best sentence scores below this is reported ``missing`` (one more
    retrieval round), like a subclaim with no evidence at all (0: only those)."""
    claim: str | None = Field(None, max_length=MAX_CLAIM_CHARS)
    """The whole claim: given (with ``stance_model``) to a learned profile's reranker only."""
    stance_model: str | None = None
    """A learned profile's model file; its evidence reranker, if any, orders each list."""
    st: StRef


class Output(BaseIO):
    """Evidence per subclaim (best first), subclaims with none, failed documents."""

    evidence: dict[str, list[EvidenceItem]]
    missing: list[str]
    skipped: list[Skipped]


class _Sentence(BaseIO):
    id: str | None = None
    idx: int = 0
    text: str


class _Session:
    """Tool calls of one skill run: each page fetched once, failures remembered."""

    def __init__(self, tools: ToolCaller) -> None:
        self.tools = tools
        self.fetched: dict[str, dict[str, Any] | None] = {}
        self.skipped: dict[tuple[str, str], Skipped] = {}

    def _skip(self, doc_id: str, tool: str, code: str | None) -> None:
        self.skipped.setdefault(
            (doc_id, tool), Skipped(doc_id=doc_id, tool=tool, code=code or "TOOL_FAILED")
        )

    def page(self, doc_id: str) -> dict[str, Any] | None:
        """The fetched page, or None if fetching failed (now or earlier in this run)."""
        if doc_id not in self.fetched:
            call = self.tools.call("page_fetch", {"doc_id": doc_id})
            ok = call.ok and call.value is not None
            self.fetched[doc_id] = call.value if ok else None
            if not ok:
                self._skip(doc_id, "page_fetch", call.code)
        return self.fetched[doc_id]

    def rank(self, q: str, doc_ids: list[str]) -> tuple[dict[str, float], bool] | None:
        """Fused scores of ``doc_ids`` against ``q`` (``rank`` tool) and whether dense
        similarity took part; None if the call failed."""
        if not doc_ids:
            return {}, False
        call = self.tools.call("rank", {"q": q[:500], "doc_ids": doc_ids[:_MAX_RANK],
                                        "lim": _MAX_RANK})
        raw = (call.value or {}).get("ranked") if call.ok else None
        if not isinstance(raw, list):
            self._skip("", "rank", call.code if not call.ok else "BAD_TOOL_RESULT")
            return None
        try:
            scores = {str(r["doc_id"]): float(r["score"]) for r in raw}
        except (TypeError, KeyError, ValueError):
            self._skip("", "rank", "BAD_TOOL_RESULT")
            return None
        return scores, (call.value or {}).get("dense") is True

    def sentences(self, doc_id: str, q: str, lim: int) -> list[_Sentence]:
        """Sentences of a fetched page ranked against ``q``; [] if the call failed."""
        call = self.tools.call("sentence_extract", {"doc_id": doc_id, "q": q, "lim": lim})
        if not call.ok:
            self._skip(doc_id, "sentence_extract", call.code)
            return []
        raw = (call.value or {}).get("sentences")
        try:
            if not isinstance(raw, list):
                raise TypeError("sentences is not a list")
            return [_Sentence.model_validate(_pick(s)) for s in raw]
        except (ValidationError, TypeError, KeyError):
            # A malformed answer counts as a failed call for this document, not a crash.
            self._skip(doc_id, "sentence_extract", "BAD_TOOL_RESULT")
            return []


def _pick(s: Any) -> dict[str, Any]:
    if not isinstance(s, Mapping):
        raise TypeError("sentence is not an object")
    return {k: s[k] for k in ("id", "idx", "text") if k in s}


def _evidence_for(claim: Claim, inp: Input, tools: _Session) -> list[EvidenceItem]:
    # Hits arrive grouped by search request (wiki results, then web ...); the best-scored
    # documents across all of them come first, ties keeping the given order.
    mine = sorted((h for h in inp.hits if h.for_ == claim.id), key=lambda h: -h.score)
    docs: dict[str, Hit] = {}
    for hit in mine:
        docs.setdefault(hit.doc_id, hit)
    ranked_pool = tools.rank(claim.c, list(docs)) if docs and inp.rank else None
    fused, dense = ranked_pool if ranked_pool is not None else (None, False)
    if fused is not None:
        # Ranked candidates first; any the index did not know keep their hit order.
        order = [d for d in fused if d in docs] + [d for d in docs if d not in fused]
    else:
        order = list(docs)
    found: list[EvidenceItem] = []
    doc_rank: dict[str, int] = {}
    for doc_id in order[: inp.docs_per_claim]:
        page = tools.page(doc_id)
        if page is None:
            continue
        doc_rank[doc_id] = len(doc_rank)
        source = str(page.get("source") or docs[doc_id].source)
        for s in tools.sentences(doc_id, claim.c, inp.per_claim):
            sid = s.id or f"{doc_id}#{s.idx}"
            found.append(EvidenceItem(id=sid, doc_id=doc_id, text=s.text, source=source,
                                      score=relevance(claim.c, s.text)))
    for f in inp.facts:
        if f.for_ == claim.id:
            text = " ".join((f.subject, f.relation.replace("_", " "), f.object))
            found.append(EvidenceItem(id=f.id, doc_id=f.id, text=text, source=f.source,
                                      score=relevance(claim.c, text)))
    unique: dict[str, tuple[int, EvidenceItem]] = {}
    for n, item in enumerate(found):
        # A dense-ranked pool can hold relevant sentences that share no key term.
        if dense or item.score > _MIN_KEEP:
            unique.setdefault(item.id, (n, item))
    kept = list(unique.values())
    # Two orders of the same sentences: by key-term coverage, and by the rank of their
    # document (facts last). Ties keep discovery order: document rank, sentence order,
    # then facts. When dense similarity ranked the pool against the whole subclaim, that
    # order alone decides (dev: recall@5 0.400 against 0.369 for the fusion of both,
    # first 400 claims); lexically the fusion of both ranks better.
    by_score = [it.id for _, it in sorted(kept, key=lambda p: (-p[1].score, p[0]))]
    by_doc = [it.id for n, it in sorted(
        kept, key=lambda p: (doc_rank.get(p[1].doc_id, len(doc_rank)), p[0]))]
    fused_rank = rrf((by_doc,) if dense else (by_score, by_doc))
    ranked = sorted(kept, key=lambda p: (-fused_rank[p[1].id], -p[1].score, p[0]))
    return [item.model_copy(update={"rank": fused_rank[item.id]})
            for _, item in ranked][: inp.per_claim]


def _reranked(evidence: dict[str, list[EvidenceItem]], claim: str, texts: dict[str, str],
              model: str) -> dict[str, list[EvidenceItem]]:
    """Each list in the order of the model's evidence reranker (``rank``: its
    probability); unchanged when the model has none or it cannot run here."""
    from claimfsm.skills.stance.rerank_session import rerank_evidence

    order = rerank_evidence(claim, texts, {sid: [(it.doc_id, it.text, it.rank, it.score)
                                          for it in items] for sid, items in evidence.items()},
                            model)
    if order is None:
        return evidence
    return {sid: [items[n].model_copy(update={"rank": r}) for n, r in order[sid]]
            for sid, items in evidence.items()}


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Fetch, extract, merge with facts, rank; VERIFY, or RETRIEVAL for one more round."""
    if not inp.claims:
        return Envelope.error("NO_CLAIMS", "claims: empty list", rb="tools")
    ids = [c.id for c in inp.claims]
    dup = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
    if dup is not None:
        return Envelope.error("DUPLICATE_CLAIM", f"claims: duplicate id '{dup}'", rb="tools")
    if ctx.tools is None:
        return Envelope.error("TOOLS_UNAVAILABLE", "ctx.tools: no tool caller", rb="tools")
    tools = _Session(ctx.tools)
    evidence = {c.id: _evidence_for(c, inp, tools) for c in inp.claims}
    if inp.stance_model is not None and inp.claim is not None:
        evidence = _reranked(evidence, inp.claim, {c.id: c.c for c in inp.claims},
                             inp.stance_model)
    # Thin evidence asks for the follow-up round too: no sentence covers enough of the
    # subclaim's key terms to judge it.
    missing = [sid for sid, items in evidence.items()
               if not items or max(it.score for it in items) < inp.min_best]
    out = Output(evidence=evidence, missing=missing, skipped=list(tools.skipped.values()))
    fsm = FOLLOW_UP if missing and inp.round < inp.max_rounds else NEXT
    return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1, fsm=fsm)


SKILL: Skill[Input, Output] = Skill(
    name="evidence_extract",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="tools",
    description="Fetch top hits, extract and rank evidence sentences per subclaim.",
    version=SKILL_VERSIONS["evidence_extract"],
)
