"""RETRIEVAL: compose tool requests, run them as plan steps, follow up on gaps.

The state is entered once and stepped several times; each step is one revision, so a
session killed mid-RETRIEVAL resumes from its head without re-running finished calls:

1. no requests yet   -> compose them (seed 000: the ``tool_request_compose`` card, plus one
   request per planned query for each tool bound to RETRIEVAL), add one claim-level
   ``web_search`` per subclaim when ``claim_lim`` > 0 (the whole subclaim as the query,
   ``claim_lim`` results: the planner's short queries choose a few terms, this one ranks
   the corpus by all of them), validate every request against its tool's params before
   anything runs; stay.
2. steps pending     -> run the next ``batch`` of runnable plan steps (seed 004) through
   ``ctx.tools``, at the same time when it can gather them (their results kept in plan
   order); a step whose ``expected_key`` is already in the outputs is ``skipped``
   and reuses that result; stay.
3. all done          -> compare each subclaim's keywords with what its results cover
   (seed 003); for uncovered keywords inject a follow-up (first a differently-sourced
   ``search``, then ``kb_lookup``), each follow-up tool at most once per subclaim; stay.
   After a bounded round back from EXTRACT, subclaims that found no evidence get one
   ``web_search`` each.
4. nothing left      -> move to EXTRACT with the coverage report.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field

from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext, ToolCall, ToolCaller
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.followups import (
    Claim,
    Coverage,
    Followup,
    PlanIn,
    Request,
    ResultRec,
    coverage,
    next_followups,
)
from claimfsm.skills.plan_steps import (
    QUERY_TYPE_FIELD,
    OutputPathMissing,
    PlanStep,
    StepStatus,
    StepUpdate,
    extract,
    nest,
    registry_of,
    runnable,
    satisfied,
    steps_for,
    validate_params,
)
from claimfsm.skills.tool_request_compose import compose
from claimfsm.skills.tools.core import QueryTypeUnsupported, ToolError
from claimfsm.skills.tools.gather import CallRequest
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = [
    "CLAIM_LIM",
    "CLAIM_TOOL",
    "SKILL",
    "Claim",
    "Coverage",
    "Followup",
    "Input",
    "Output",
    "PlanIn",
    "Request",
    "ResultRec",
    "coverage",
    "handler",
]

CLAIM_TOOL = "web_search"
CLAIM_LIM = 20
"""The claim-level request size evaluation uses: a bigger candidate pool for EXTRACT."""
_MAX_Q = 500  # the search tools' query limit


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
    steps: list[PlanStep] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)
    bound: list[str] = Field(default_factory=list)
    claim_lim: int = Field(default=0, ge=0, le=50)
    """Results of the claim-level request per subclaim (0, the default: none; session
    config ``claim_lim``, :data:`CLAIM_LIM` in evaluation)."""
    st: StRef


class Output(BaseIO):
    """What one step added: new requests, new results (and the plan steps they finish),
    follow-ups, or the coverage."""

    tr: list[Request] | None = None
    results: list[ResultRec] | None = None
    steps: list[StepUpdate] | None = None
    followups: list[Followup] | None = None
    coverage: list[Coverage] | None = None


def _dump(out: Output) -> dict[str, Any]:
    return out.model_dump(mode="json", by_alias=True, exclude_none=True)


def _bound_requests(inp: Input, first: int, registry: ToolRegistry | None) -> list[Request]:
    """One request per planned query for each tool bound to RETRIEVAL: ``{q, lim}``, or
    those of the two its params declare when the registry is known."""
    out: list[Request] = []
    for plan in inp.plans:
        for q in plan.q:
            for name in inp.bound:
                args: dict[str, Any] = {"q": q, "lim": plan.lim}
                spec = registry.get(name) if registry is not None else None
                if spec is not None:
                    args = {k: v for k, v in args.items() if k in spec.params.model_fields}
                out.append(Request(id=f"t{first + len(out) + 1}", tool=name, args=args,
                                   for_=plan.id))
    return out


def _claim_requests(inp: Input, first: int, registry: ToolRegistry | None) -> list[Request]:
    """One ``web_search`` per subclaim with the whole subclaim as its query (the composer's
    requests stay as the card makes them; these follow them)."""
    if inp.claim_lim == 0 or (registry is not None and CLAIM_TOOL not in registry):
        return []
    out: list[Request] = []
    for claim in inp.claims:
        q = " ".join(claim.c.split())[:_MAX_Q].strip()
        if q:
            out.append(Request(id=f"t{first + len(out) + 1}", tool=CLAIM_TOOL,
                               args={"q": q, "lim": inp.claim_lim}, for_=claim.id))
    return out


def _validate(reqs: list[Request], registry: ToolRegistry | None) -> Envelope | None:
    """Every request checked against its tool's params before any runs (seed 004)."""
    if registry is None:  # a replay or a bare caller: the recorded calls are the truth
        return None
    for req in reqs:
        where = f"tr.{req.id}.args"
        try:
            validate_params(registry, req.tool, req.args, where=where)
        except ToolError as exc:
            detail = exc.user_message()
            if isinstance(exc, QueryTypeUnsupported):
                detail = f"{where}.{QUERY_TYPE_FIELD}: {detail}"
            return Envelope.error(
                exc.code, f"{req.id} ({req.tool}): {detail}; no request was run", rb="tools"
            )
    return None


def _plan(inp: Input) -> list[PlanStep]:
    """The plan steps: as given, or derived from the requests and results (bare input)."""
    if inp.steps:
        return inp.steps
    reasons = {f.id: f.reason for f in inp.followups}
    steps = steps_for([r.model_dump(by_alias=True) for r in inp.tr], reasons=reasons)
    status = {r.id: ("completed" if r.ok else "failed") for r in inp.results}
    return [s.model_copy(update={"status": status[s.id]}) if s.id in status else s
            for s in steps]


def _skipped(step: PlanStep, inp: Input) -> tuple[ResultRec, StepUpdate]:
    rec = ResultRec(id=step.id, for_=step.for_, tool=step.tool, ok=True,
                    msg=f"skipped: {step.expected_key} already in outputs",
                    value=nest(step.output_path, inp.outputs[step.expected_key]))
    return rec, StepUpdate(id=step.id, status="skipped", rev=inp.st.rev + 1)


def _done(step: PlanStep, inp: Input, call: ToolCall) -> tuple[ResultRec, StepUpdate]:
    ok, code, msg = call.ok, call.code, call.message
    if ok:
        try:
            extract(call.value, step.output_path)
        except OutputPathMissing as exc:
            ok, code, msg = False, exc.code, exc.user_message()
    rec = ResultRec(id=step.id, for_=step.for_, tool=call.tool, ok=ok, code=code, msg=msg,
                    value=call.value)
    status: StepStatus = "completed" if ok else "failed"
    return rec, StepUpdate(id=step.id, status=status, rev=inp.st.rev + 1, code=code)


def _run_steps(
    todo: list[PlanStep], inp: Input, tools: ToolCaller
) -> Iterator[tuple[ResultRec, StepUpdate]]:
    """Each step's result in plan order; the calls run at once when the tools can gather
    them (the executor; a replay answers one by one from the record, in the same order).
    Lazy one by one: the caller stops at a rate limit and the later calls are not made."""
    calls = [s for s in todo if not satisfied(s, inp.outputs)]
    gather = getattr(tools, "gather", None)
    if gather is None or len(calls) < 2:
        for step in todo:
            if satisfied(step, inp.outputs):
                yield _skipped(step, inp)
            else:
                yield _done(step, inp, tools.call(step.tool, step.params, call_id=step.id,
                                                  key=step.for_))
        return
    made = gather([CallRequest(s.tool, s.params, s.id, s.for_) for s in calls],
                  scope=str(inp.st.rev))
    got = {s.id: c for s, c in zip(calls, made, strict=True)}
    for step in todo:
        if step.id not in got:
            yield _skipped(step, inp)
            continue
        call = got[step.id]
        if call is None:  # not made: a rate limit refused an earlier call
            return
        yield _done(step, inp, call)


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """One RETRIEVAL step (see the module docstring for the phases)."""
    rev = inp.st.rev + 1
    registry = registry_of(ctx.tools)
    if not inp.tr:
        if not inp.plans:
            return Envelope.error("NO_PLANS", "plans: no query plans to compose", rb="tools")
        composed = compose([p.model_dump() for p in inp.plans])
        if isinstance(composed, Envelope):
            return composed
        reqs = [Request.model_validate(r) for r in composed]
        reqs += _bound_requests(inp, len(reqs), registry)
        reqs += _claim_requests(inp, len(reqs), registry)
        return _validate(reqs, registry) or Envelope.ok(
            _dump(Output(tr=reqs)), rev=rev, fsm="RETRIEVAL"
        )

    steps = _plan(inp)
    ready = runnable(steps)
    if any(s.status == "pending" for s in steps):
        if not ready:
            return Envelope.error("BAD_PLAN", "steps: pending steps wait on steps that "
                                  "never finish", rb="tools")
        if ctx.tools is None:
            return Envelope.error("TOOLS_UNAVAILABLE", "no tool runtime in context", rb="tools")
        pending = [Request(id=s.id, tool=s.tool, args=s.params, for_=s.for_)
                   for s in steps if s.status == "pending"]
        bad = _validate(pending, registry)  # however the steps got here, none runs if one is bad
        if bad is not None:
            return bad
        recs: list[ResultRec] = []
        done: list[StepUpdate] = []
        for rec, upd in _run_steps(ready[: inp.batch], inp, ctx.tools):
            if not rec.ok and rec.code == "RATE_LIMITED":
                if recs:  # keep what this step finished; the limited step stays pending
                    break
                return Envelope.retry("RATE_LIMITED", f"{rec.id} ({rec.tool}): {rec.msg}")
            recs.append(rec)
            done.append(upd)
        return Envelope.ok(_dump(Output(results=recs, steps=done)), rev=rev, fsm="RETRIEVAL")

    follow = next_followups(inp.claims, inp.plans, inp.tr, inp.results, inp.followups,
                            missing=inp.missing, round=inp.round)
    if follow:
        reqs = [r for r, _ in follow]
        bad = _validate(reqs, registry)
        if bad is not None:
            return bad
        out = Output(tr=reqs, followups=[f for _, f in follow])
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
    version=SKILL_VERSIONS["retrieve"],
)
