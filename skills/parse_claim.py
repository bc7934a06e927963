"""PARSE_CLAIM: split the claim into subclaims, then plan their evidence queries.

Splitting is :func:`claimfsm.skills.analysis.split.split_claim` (conservative: independent facts
only); planning is the Evidence Query Planner's pure :func:`plan_claims` (seed 002), so
``parse_claim`` and ``evidence_query_plan`` always plan alike. The card is
``skills/cards/parse_claim.md``.
"""

from __future__ import annotations

from pydantic import Field

from claimfsm.skills.analysis.split import split_claim
from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_query_plan import Claim, Plan, plan_claims
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_LIST, MAX_SUBCLAIMS, too_large
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = ["SKILL", "Input", "Output", "handler", "subclaims"]


class Input(BaseIO):
    """The user's claim, the session ref and optional disambiguation hints."""

    claim: str = Field(max_length=MAX_CLAIM_CHARS)
    st: StRef
    hints: list[str] | None = Field(None, max_length=MAX_LIST)


class Output(BaseIO):
    """``d`` without ``sp``: the subclaims and one query plan per subclaim."""

    claims: list[Claim]
    plans: list[Plan]


def subclaims(claim: str) -> list[Claim]:
    """The claim's subclaims with ids ``s1, s2, ...`` (empty if it has no words)."""
    return [Claim(id=f"s{i}", c=text) for i, text in enumerate(split_claim(claim), start=1)]


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Split, plan, and move the session to RETRIEVAL."""
    claims = subclaims(inp.claim)
    if len(claims) > MAX_SUBCLAIMS:
        return too_large("claim", len(claims), MAX_SUBCLAIMS, "subclaims")
    if not claims:
        return Envelope.error(
            "NO_CLAIMS", "claim: empty, whitespace-only or without words", rb="state"
        )
    plans = plan_claims(claims, hints=inp.hints, now=ctx.clock.now())
    if isinstance(plans, Envelope):
        return plans
    return Envelope.ok(
        Output(claims=claims, plans=plans).model_dump(mode="json"),
        rev=inp.st.rev + 1,
        fsm="RETRIEVAL",
    )


SKILL: Skill[Input, Output] = Skill(
    name="parse_claim",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="state",
    description="Split the claim into independent subclaims and plan evidence queries "
    "for each.",
    version=SKILL_VERSIONS["parse_claim"],
)
