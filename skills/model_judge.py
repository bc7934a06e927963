"""VERIFY with ``--judge model``: a language model judges each subclaim, citing sentences.

The model gets each subclaim with its best evidence sentences (by id) and answers a
stance per subclaim with the ids it rests on. A citation of a sentence that is not in the
session's evidence for that subclaim is rejected, as is a SUPPORTS or REFUTES citing
nothing; a broken answer is repaired (:func:`claimfsm.skills.model_call.ask`), then
``MODEL_BAD_OUTPUT`` with the card's ``rb`` (``state``), or, with
``on_error = "fallback"``, the lexical judge's judgments, each saying why.

A subclaim without evidence is NOT_ENOUGH_INFO without asking. Without ``model`` in its
input this is exactly ``stance_judge``.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from claimfsm.skills import stance_judge
from claimfsm.skills.base import Skill
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_extract import Claim, EvidenceItem
from claimfsm.skills.limits import MAX_SUBCLAIMS
from claimfsm.skills.model_call import ModelFailure, ModelUse, ask, output_schema, prompt
from claimfsm.skills.stance.lexical import Label

__all__ = ["CONFIDENCE_LEVELS", "SENTENCES_ASKED", "SKILL", "Answer", "Input", "ModelJudgment",
           "check", "handler"]

SENTENCES_ASKED = 8
"""Evidence sentences per subclaim in the prompt (the best ranked): bounds its size."""
CONFIDENCE_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The confidences the schema offers the model."""


class Input(stance_judge.Input):
    """``stance_judge``'s input, and the model to ask (``None``: the rules judge)."""

    model: ModelUse | None = None


class ModelJudgment(BaseModel):
    """One subclaim's stance as the model answers it."""

    model_config = ConfigDict(defer_build=True)

    id: str
    verdict: Label
    confidence: float = Field(ge=0, le=1)
    cites: list[str] = Field(default_factory=list, max_length=SENTENCES_ASKED)


class Answer(BaseModel):
    """What the model answers."""

    model_config = ConfigDict(defer_build=True)

    judgments: list[ModelJudgment] = Field(max_length=MAX_SUBCLAIMS)


def check(asked: list[Claim], evidence: dict[str, list[EvidenceItem]],
          answer: Answer) -> str | None:
    """The first problem of ``answer``: wrong ids or order, a citation outside the
    subclaim's evidence, a verdict resting on nothing; ``None`` when it is sound."""
    if [j.id for j in answer.judgments] != [c.id for c in asked]:
        return f"judgments: expected one per subclaim, ids {[c.id for c in asked]}"
    for i, j in enumerate(answer.judgments):
        known = {e.id for e in evidence.get(j.id, [])}
        outside = [c for c in j.cites if c not in known]
        if outside:
            return f"judgments.{i}.cites: {outside[0]!r} is not evidence of subclaim {j.id}"
        if j.verdict != "NOT_ENOUGH_INFO" and not j.cites:
            return f"judgments.{i}.cites: {j.verdict} must cite the sentences it rests on"
    return None


def _schema(asked: list[Claim], evidence: dict[str, list[EvidenceItem]]) -> dict[str, Any]:
    schema = output_schema(Answer)
    one = schema["$defs"]["ModelJudgment"]
    one["properties"]["id"] = {"type": "string", "enum": [c.id for c in asked]}
    ids = sorted({e.id for c in asked for e in evidence[c.id][:SENTENCES_ASKED]})
    one["properties"]["cites"]["items"] = {"type": "string", "enum": ids}
    # Grammar converters do not bound number ranges everywhere: five levels, as an enum.
    one["properties"]["confidence"] = {"type": "number", "enum": list(CONFIDENCE_LEVELS)}
    schema["properties"]["judgments"]["minItems"] = len(asked)
    schema["properties"]["judgments"]["maxItems"] = len(asked)
    return schema


def _messages(asked: list[Claim], evidence: dict[str, list[EvidenceItem]]) -> list[dict[str, str]]:
    items = [{"id": c.id, "c": c.c,
              "evidence": [{"id": e.id, "text": e.text} for e in evidence[c.id][:SENTENCES_ASKED]]}
             for c in asked]
    return [{"role": "system", "content": prompt("judge")},
            {"role": "user", "content": orjson.dumps({"subclaims": items}).decode()}]


def _judgment(j: ModelJudgment, model: str) -> stance_judge.Judgment:
    return stance_judge.Judgment(id=j.id, verdict=j.verdict, confidence=j.confidence,
                                 cites=list(dict.fromkeys(j.cites)),
                                 reasons=[f"model judge ({model})"])


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Judge by the model (citations checked), by the rules, or fail."""
    use = inp.model
    if use is None:
        return stance_judge.handler(inp, ctx)
    if not inp.claims:
        return Envelope.error("NO_CLAIMS", "claims: empty list", rb="state")
    ids = [c.id for c in inp.claims]
    if len(set(ids)) != len(ids):
        return stance_judge.handler(inp, ctx)  # its DUPLICATE_CLAIM error, as worded there
    asked = [c for c in inp.claims if inp.evidence.get(c.id)]
    by_id: dict[str, stance_judge.Judgment] = {}
    if asked:
        got = ask(ctx, use, _messages(asked, inp.evidence), Answer,
                  check=lambda a: check(asked, inp.evidence, a),
                  schema=_schema(asked, inp.evidence))
        if isinstance(got, ModelFailure):
            if use.on_error == "fail":
                return Envelope.error(got.code, f"judge: {got.msg}", rb="state")
            fallback = stance_judge.handler(inp, ctx)
            if fallback.s != "ok" or fallback.d is None:
                return fallback
            note = f"model judge failed ({got.code}: {got.msg}): lexical judge used"
            judged = [stance_judge.Judgment.model_validate(j)
                      for j in fallback.d["judgments"]]
            out = stance_judge.Output(judgments=[
                j.model_copy(update={"reasons": [*j.reasons, note]}) for j in judged])
            return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1,
                               fsm=stance_judge.NEXT)
        by_id = {j.id: _judgment(j, use.model) for j in got.judgments}
    judgments = [by_id.get(c.id) or stance_judge.Judgment(
        id=c.id, verdict="NOT_ENOUGH_INFO", confidence=0.0,
        reasons=["no evidence sentence for this subclaim"]) for c in inp.claims]
    out = stance_judge.Output(judgments=judgments)
    return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1, fsm=stance_judge.NEXT)


SKILL: Skill[Input, stance_judge.Output] = Skill(
    name="stance_judge",
    input_model=Input,
    output_model=stance_judge.Output,
    handler=handler,
    rb_on_error="state",
    description="Judge each subclaim against its evidence, by the rules or by a language "
    "model whose citations are checked against the session's evidence.",
)
