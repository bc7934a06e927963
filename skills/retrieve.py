"""RETRIEVAL: compose tool requests, run them one step at a time, follow up on gaps.

The state is entered once and stepped several times; each step is one revision, so a
session killed mid-RETRIEVAL resumes from its head without re-running finished calls:

1. no requests yet   -> compose them (seed 000: the ``tool_request_compose`` card); stay.
2. requests pending  -> execute the next ``batch`` of them through ``ctx.tools``; stay.
3. all done          -> compare each subclaim's keywords with what its results cover
   (seed 003); for uncovered keywords inject a follow-up (first a differently-sourced
   ``search``, then ``kb_lookup``), each follow-up tool at most once per subclaim; stay.
   After a bounded round back from EXTRACT, subclaims that found no evidence get one
   ``web_search`` each.
4. nothing left      -> move to EXTRACT with the coverage report.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from skills.base import BaseIO, Skill, StRef
from skills.context import SkillContext
from skills.envelope import Envelope
from skills.text import keywords, stem, tokens
from skills.tool_request_compose import compose

__all__ = ["SKILL", "Input", "Output", "coverage", "handler"]

_SOURCES = ("wiki", "web", "news")


class Claim(BaseIO):
    id: str
    c: str


class PlanIn(BaseIO):
    id: str
    q: list[str]
    src: list[str]
    lim: int


class _Aliased(BaseIO):
    """Models with a ``for`` field (a Python keyword): ``for_`` in code, ``for`` on the wire."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Request(_Aliased):
    id: str
    tool: str
    args: dict[str, Any]
    # ``for`` is a keyword in Python; the wire name is kept.
    for_: str = Field(alias="for")


class ResultRec(_Aliased):
    id: str
    for_: str = Field(alias="for")
    tool: str
    ok: bool
    code: str | None = None
    msg: str = ""
    value: dict[str, Any] | None = None


class Followup(_Aliased):
    id: str
    for_: str = Field(alias="for")
    tool: str
    round: int = 0
    missing: list[str]
    reason: str


class Coverage(BaseIO):
    id: str
    covered: list[str]
    missing: list[str]


class Input(BaseIO):
    """The session's subclaims, plans and everything RETRIEVAL has done so far."""

    claims: list[Claim]
    plans: list[PlanIn]
    tr: list[Request] = Field(default_factory=list)
    results: list[ResultRec] = Field(default_factory=list)
    followups: list[Followup] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    round: int = Field(default=0, ge=0)
    batch: int = Field(default=1, ge=1, le=64)
    st: StRef


class Output(BaseIO):
    """What one step added: new requests, new results, follow-ups, or the coverage."""

    tr: list[Request] | None = None
    results: list[ResultRec] | None = None
    followups: list[Followup] | None = None
    coverage: list[Coverage] | None = None


Phase = Literal["compose", "execute", "followup", "done"]


def _dump(out: Output) -> dict[str, Any]:
    return out.model_dump(mode="json", by_alias=True, exclude_none=True)


def _result_text(rec: ResultRec) -> str:
    if not rec.ok or rec.value is None:
        return ""
    parts: list[str] = []
    for hit in rec.value.get("hits", []):
        parts.append(str(hit.get("title", "")))
        parts.append(str(hit.get("snippet", "")))
    for fact in rec.value.get("facts", []):
        parts.extend(str(fact.get(k, "")) for k in ("subject", "relation", "object"))
    return " ".join(parts)


def coverage(claims: list[Claim], results: list[ResultRec]) -> list[Coverage]:
    """Which of each subclaim's keywords its results' text covers (by stem)."""
    out: list[Coverage] = []
    for claim in claims:
        seen = {stem(t) for r in results if r.for_ == claim.id for t in tokens(_result_text(r))}
        kws = keywords(claim.c)
        out.append(
            Coverage(
                id=claim.id,
                covered=[k for k in kws if stem(k) in seen],
                missing=[k for k in kws if stem(k) not in seen],
            )
        )
    return out


def _next_followups(inp: Input) -> list[tuple[Request, Followup]]:
    used = {(f.for_, f.tool, f.round) for f in inp.followups}
    n = len(inp.tr)
    new: list[tuple[Request, Followup]] = []

    def add(sid: str, tool: str, args: dict[str, Any], missing: list[str], reason: str) -> None:
        nonlocal n
        n += 1
        rid = f"t{n}"
        new.append(
            (
                Request(id=rid, tool=tool, args=args, for_=sid),
                Followup(id=rid, for_=sid, tool=tool, round=inp.round, missing=missing,
                         reason=reason),
            )
        )

    if inp.round > 0:
        claims = {c.id: c for c in inp.claims}
        for sid in inp.missing:
            if sid in claims and (sid, "web_search", inp.round) not in used:
                q = " ".join(keywords(claims[sid].c)[:8])
                if q:
                    add(sid, "web_search", {"q": q, "lim": 5}, [],
                        f"round {inp.round}: no evidence extracted for {sid}")
        return new

    lim_of = {p.id: p.lim for p in inp.plans}
    for cov in coverage(inp.claims, inp.results):
        if not cov.missing:
            continue
        q = " ".join(cov.missing[:8])
        why = "keywords not covered by results: " + ", ".join(cov.missing)
        lim = lim_of.get(cov.id, 4)
        if (cov.id, "search", 0) not in used:
            tried = {str(r.args.get("src")) for r in inp.tr if r.for_ == cov.id}
            fresh = [s for s in _SOURCES if s not in tried]
            if fresh:
                add(cov.id, "search", {"q": q, "lim": lim, "src": fresh[0]}, cov.missing, why)
                continue
        if (cov.id, "kb_lookup", 0) not in used:
            add(cov.id, "kb_lookup", {"q": q, "lim": lim, "src": "kb"}, cov.missing, why)
    return new


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """One RETRIEVAL step (see the module docstring for the phases)."""
    rev = inp.st.rev + 1
    if not inp.tr:
        if not inp.plans:
            return Envelope.error("NO_PLANS", "plans: no query plans to compose", rb="tools")
        composed = compose([p.model_dump() for p in inp.plans])
        if isinstance(composed, Envelope):
            return composed
        reqs = [Request.model_validate(r) for r in composed]
        return Envelope.ok(_dump(Output(tr=reqs)), rev=rev, fsm="RETRIEVAL")

    done = {r.id for r in inp.results}
    pending = [r for r in inp.tr if r.id not in done]
    if pending:
        if ctx.tools is None:
            return Envelope.error("TOOLS_UNAVAILABLE", "no tool runtime in context", rb="tools")
        recs: list[ResultRec] = []
        for req in pending[: inp.batch]:
            call = ctx.tools.call(req.tool, req.args, call_id=req.id, key=req.for_)
            if not call.ok and call.code == "RATE_LIMITED":
                return Envelope.retry("RATE_LIMITED", f"{req.id} ({call.tool}): {call.message}")
            recs.append(
                ResultRec(id=req.id, for_=req.for_, tool=call.tool, ok=call.ok, code=call.code,
                          msg=call.message, value=call.value)
            )
        return Envelope.ok(_dump(Output(results=recs)), rev=rev, fsm="RETRIEVAL")

    follow = _next_followups(inp)
    if follow:
        out = Output(tr=[r for r, _ in follow], followups=[f for _, f in follow])
        return Envelope.ok(_dump(out), rev=rev, fsm="RETRIEVAL")
    return Envelope.ok(
        _dump(Output(coverage=coverage(inp.claims, inp.results))), rev=rev, fsm="EXTRACT"
    )


SKILL: Skill[Input, Output] = Skill(
    name="retrieve",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="tools",
    description="Compose tool requests, run them step by step, follow up on uncovered keywords.",
)
