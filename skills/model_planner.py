"""PARSE_CLAIM with ``--planner model``: a language model plans the evidence queries.

The subclaims are split as always (:func:`claimfsm.skills.parse_claim.subclaims`); the
model gets the Evidence Query Planner card as its prompt and plans each subclaim's
queries, and its plan must pass the deterministic planner's rules: one plan per subclaim
in order, 1-4 queries of at most 8 words, known sources, a limit of 3-5, and every number
of the subclaim kept in some query. An answer that breaks them is repaired
(:func:`claimfsm.skills.model_call.ask`), then ``MODEL_BAD_OUTPUT`` with the card's
``rb`` (``state``), or, with ``on_error = "fallback"``, the rules' own plan, recorded in
``d.model`` as ``{"via": "fallback", "code", "msg"}``.

Without ``model`` in its input this is exactly ``parse_claim`` (the default profile, and
every session recorded before model-backed skills).
"""

from __future__ import annotations

import orjson
from pydantic import BaseModel, ConfigDict, Field

from claimfsm.skills import parse_claim
from claimfsm.skills.analysis.text import numbers
from claimfsm.skills.base import BaseIO, Skill
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_query_plan import MAX_QUERIES, MAX_TOKENS, Claim, Plan, query_tokens
from claimfsm.skills.limits import MAX_SUBCLAIMS, too_large
from claimfsm.skills.model_call import ModelFailure, ModelUse, ask, output_schema, prompt

__all__ = ["SKILL", "Answer", "Input", "ModelNote", "Output", "check_plans", "handler"]


class Input(parse_claim.Input):
    """``parse_claim``'s input, and the model to ask (``None``: plan by the rules)."""

    model: ModelUse | None = None


class ModelNote(BaseIO):
    """How a model-backed step was answered: by the model, or by the fallback and why."""

    via: str
    prompt: str | None = None
    code: str | None = None
    msg: str | None = None


class Output(parse_claim.Output):
    """``parse_claim``'s output, and ``model`` when a model was asked."""

    model: ModelNote | None = None


class Answer(BaseModel):
    """What the model answers."""

    model_config = ConfigDict(defer_build=True)

    plans: list[Plan] = Field(max_length=MAX_SUBCLAIMS)


def check_plans(claims: list[Claim], answer: Answer) -> str | None:
    """The first rule of the deterministic planner ``answer`` breaks, or ``None``."""
    if [p.id for p in answer.plans] != [c.id for c in claims]:
        return f"plans: expected one plan per subclaim, ids {[c.id for c in claims]}"
    for i, (claim, plan) in enumerate(zip(claims, answer.plans, strict=True)):
        for j, q in enumerate(plan.q):
            if not q.strip():
                return f"plans.{i}.q.{j}: empty query"
            if query_tokens(q) > MAX_TOKENS:
                return f"plans.{i}.q.{j}: {query_tokens(q)} words, at most {MAX_TOKENS}"
        said = " ".join(plan.q)
        lost = [n for n in numbers(claim.c) if n not in said]
        if lost:
            return f"plans.{i}.q: the number {lost[0]!r} of the subclaim is in no query"
    return None


def _schema(claims: list[Claim]) -> dict[str, object]:
    schema = output_schema(Answer)
    # Narrowed to what is valid here: a server's grammar then keeps even a weak model's
    # answer in shape (the ids, the count, short queries).
    plan = schema["$defs"]["Plan"]
    plan["properties"]["id"] = {"type": "string", "enum": [c.id for c in claims]}
    plan["properties"]["q"]["items"] = {"type": "string", "minLength": 1, "maxLength": 60}
    plan["properties"]["q"]["maxItems"] = MAX_QUERIES
    plan["properties"]["src"]["maxItems"] = 4
    # Grammar converters bound strings and counts but not every number range: an enum is
    # bounded everywhere.
    plan["properties"]["lim"] = {"type": "integer", "enum": [3, 4, 5]}
    schema["properties"]["plans"]["minItems"] = len(claims)
    schema["properties"]["plans"]["maxItems"] = len(claims)
    return schema


def _messages(claims: list[Claim], hints: list[str] | None) -> list[dict[str, str]]:
    ask_for = {"subclaims": [c.model_dump() for c in claims], "hints": hints}
    return [{"role": "system", "content": prompt("planner")},
            {"role": "user", "content": orjson.dumps(ask_for).decode()}]


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Plan by the model (checked by the rules), by the rules, or fail."""
    use = inp.model
    if use is None:
        return parse_claim.handler(inp, ctx)
    claims = parse_claim.subclaims(inp.claim)
    if len(claims) > MAX_SUBCLAIMS:
        return too_large("claim", len(claims), MAX_SUBCLAIMS, "subclaims")
    if not claims:
        return Envelope.error("NO_CLAIMS", "claim: empty, whitespace-only or without words",
                              rb="state")
    got = ask(ctx, use, _messages(claims, inp.hints), Answer,
              check=lambda a: check_plans(claims, a), schema=_schema(claims))
    if isinstance(got, ModelFailure):
        if use.on_error == "fail":
            return Envelope.error(got.code, f"planner: {got.msg}", rb="state")
        fallback = parse_claim.handler(inp, ctx)
        if fallback.s != "ok" or fallback.d is None:
            return fallback
        note = ModelNote(via="fallback", prompt=use.prompt, code=got.code, msg=got.msg)
        d = {k: v for k, v in fallback.d.items() if k != "sp"}
        return Envelope.ok({**d, "model": note.model_dump(mode="json")}, rev=inp.st.rev + 1,
                           fsm="RETRIEVAL")
    out = Output(claims=claims, plans=got.plans,
                 model=ModelNote(via="model", prompt=use.prompt))
    return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1, fsm="RETRIEVAL")


SKILL: Skill[Input, Output] = Skill(
    name="parse_claim",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="state",
    description="Split the claim into subclaims and plan evidence queries, by the rules or "
    "by a language model checked by the rules.",
)
