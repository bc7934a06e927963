"""Tool Request Composer (seed 000): one tool request per planned query.

``kb_lookup`` when a plan's sources are only ``kb``; otherwise ``search`` on the best
non-kb source (wiki > web > news). Ids ``t1, t2, ...`` in plan order, then query order.
Queries are never merged and ``args.q`` is the planned query exactly. The rate-limit
fallback to ``web_search`` (the card's step 3) belongs to the executor, not here. The
card is ``skills/cards/tool_request_compose.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypedDict

from pydantic import Field, ValidationError

from claimfsm.skills.base import BaseIO, Skill, StRef, describe_validation_error
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = [
    "SEARCH_PREFERENCE",
    "SKILL",
    "SOURCES",
    "Input",
    "Output",
    "PlanIn",
    "Request",
    "RequestArgs",
    "ToolArgs",
    "ToolRequest",
    "compose",
    "handler",
]

SOURCES: frozenset[str] = frozenset({"wiki", "web", "news", "kb"})
SEARCH_PREFERENCE: tuple[str, ...] = ("wiki", "web", "news")

Tool = Literal["search", "kb_lookup"]
Src = Literal["wiki", "web", "news", "kb"]


class ToolArgs(TypedDict):
    """``args`` of one request: the same shape for ``search`` and ``kb_lookup``."""

    q: str
    lim: int
    src: str


# ``for`` is a Python keyword, so the wire shape is declared functionally.
ToolRequest = TypedDict("ToolRequest", {"id": str, "tool": str, "args": ToolArgs, "for": str})
ToolRequest.__doc__ = "One composed tool request, keys in wire order: id, tool, args, for."


class PlanIn(BaseIO):
    """One query plan as the planner wrote it; ``src`` is checked by the handler."""

    id: str = Field(min_length=1)
    q: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    src: list[str]
    lim: int = Field(ge=1)


class RequestArgs(BaseIO):
    """Validated ``args``: ``{q, lim, src}``."""

    q: str
    lim: int
    src: Src


class Request(BaseIO):
    """Validated request; ``for_`` is serialised as ``for``."""

    model_config = BaseIO.model_config | {"populate_by_name": True}

    id: str
    tool: Tool
    args: RequestArgs
    for_: str = Field(alias="for")


class Input(BaseIO):
    """The plans to compose and the session ref."""

    plans: list[PlanIn]
    st: StRef


class Output(BaseIO):
    """``d`` without ``sp``: the requests, in id order."""

    tr: list[Request]


def _as_plan(plan: PlanIn | Mapping[str, Any], i: int) -> PlanIn | Envelope:
    if isinstance(plan, PlanIn):
        return plan
    try:
        return PlanIn.model_validate(dict(plan))
    except ValidationError as exc:
        return Envelope.error(
            "BAD_INPUT", f"plans.{i}.{describe_validation_error(exc)}", rb="tools"
        )


def _route(plan: PlanIn, i: int) -> tuple[str, str] | Envelope:
    """``(tool, src)`` for one plan, or ``BAD_SRC``."""
    if not plan.src:
        return Envelope.error("BAD_SRC", f"plans.{i}.src: no source given", rb="tools")
    for j, s in enumerate(plan.src):
        if s not in SOURCES:
            return Envelope.error(
                "BAD_SRC",
                f"plans.{i}.src.{j}: unsupported source {s!r} (expected wiki|web|news|kb)",
                rb="tools",
            )
    if set(plan.src) == {"kb"}:
        return "kb_lookup", "kb"
    best = next(s for s in SEARCH_PREFERENCE if s in plan.src)
    return "search", best


def compose(plans: Sequence[PlanIn | Mapping[str, Any]]) -> list[ToolRequest] | Envelope:
    """The pure composer: plans -> requests ``t1..tn``; ``NO_PLANS``/``BAD_SRC`` (or
    ``BAD_INPUT`` for a malformed mapping) as an error envelope with ``rb=tools``."""
    if not plans:
        return Envelope.error("NO_PLANS", "plans: empty list, nothing to compose", rb="tools")
    out: list[ToolRequest] = []
    for i, raw in enumerate(plans):
        plan = _as_plan(raw, i)
        if isinstance(plan, Envelope):
            return plan
        route = _route(plan, i)
        if isinstance(route, Envelope):
            return route
        tool, src = route
        for q in plan.q:
            out.append(
                {
                    "id": f"t{len(out) + 1}",
                    "tool": tool,
                    "args": {"q": q, "lim": plan.lim, "src": src},
                    "for": plan.id,
                }
            )
    return out


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Compose the requests for ``inp.plans``; the session stays in RETRIEVAL."""
    composed = compose(inp.plans)
    if isinstance(composed, Envelope):
        return composed
    out = Output(tr=[Request.model_validate(r) for r in composed])
    return Envelope.ok(
        out.model_dump(mode="json", by_alias=True), rev=inp.st.rev + 1, fsm="RETRIEVAL"
    )


SKILL: Skill[Input, Output] = Skill(
    name="tool_request_compose",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="tools",
    description="Translate query plans into one search/kb_lookup request per query.",
    version=SKILL_VERSIONS["tool_request_compose"],
)
