"""EXTRACT: fetch the top hits' pages, extract and rank evidence sentences per subclaim.

For each subclaim the skill fetches its top ``docs_per_claim`` distinct documents
(``page_fetch``, each document at most once per call), asks ``sentence_extract`` for the
sentences that best match the subclaim, adds the knowledge-base facts retrieved for it
(as sentences "subject relation object"), scores everything with one relevance measure
(:func:`skills.stance.relevance`) and keeps the best ``per_claim``. A failed tool call
skips that document and is listed in ``skipped``; it never aborts the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError

from skills.base import BaseIO, Skill, StRef
from skills.context import SkillContext, ToolCaller
from skills.envelope import Envelope
from skills.stance import relevance

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


class Claim(BaseIO):
    """A subclaim: id and text."""

    id: str = Field(min_length=1)
    c: str = Field(min_length=1)


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
    """One evidence sentence: id (``doc#idx`` or the fact id), where from, how relevant."""

    id: str
    doc_id: str
    text: str
    source: str
    score: float


class Skipped(BaseIO):
    """A document left out because a tool call failed."""

    doc_id: str
    tool: str
    code: str


class Input(BaseIO):
    """Subclaims, their hits and facts, and the follow-up round counters."""

    claims: list[Claim]
    hits: list[Hit] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    round: int = Field(0, ge=0)
    max_rounds: int = Field(1, ge=0)
    docs_per_claim: int = Field(3, ge=1)
    per_claim: int = Field(5, ge=1)
    min_best: float = Field(0.0, ge=0, le=1)
    """A subclaim whose best sentence scores below this is reported ``missing`` (one more
    retrieval round), like a subclaim with no evidence at all (0: only those)."""
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
    docs: list[Hit] = []
    for hit in mine:
        if hit.doc_id not in {d.doc_id for d in docs}:
            docs.append(hit)
    found: list[EvidenceItem] = []
    for hit in docs[: inp.docs_per_claim]:
        page = tools.page(hit.doc_id)
        if page is None:
            continue
        source = str(page.get("source") or hit.source)
        for s in tools.sentences(hit.doc_id, claim.c, inp.per_claim):
            sid = s.id or f"{hit.doc_id}#{s.idx}"
            found.append(EvidenceItem(id=sid, doc_id=hit.doc_id, text=s.text, source=source,
                                      score=relevance(claim.c, s.text)))
    for f in inp.facts:
        if f.for_ == claim.id:
            text = " ".join((f.subject, f.relation.replace("_", " "), f.object))
            found.append(EvidenceItem(id=f.id, doc_id=f.id, text=text, source=f.source,
                                      score=relevance(claim.c, text)))
    unique: dict[str, tuple[int, EvidenceItem]] = {}
    for order, item in enumerate(found):
        unique.setdefault(item.id, (order, item))
    # Ties keep discovery order: hit rank, then sentence order, then facts.
    ranked = sorted(unique.values(), key=lambda p: (-p[1].score, p[0]))
    return [item for _, item in ranked if item.score > _MIN_KEEP][: inp.per_claim]


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
    # Thin evidence asks for the follow-up round too: no sentence covers enough of the
    # subclaim's key terms to judge it.
    missing = [sid for sid, items in evidence.items()
               if not items or items[0].score < inp.min_best]
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
)
