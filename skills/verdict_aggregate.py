"""AGGREGATE: one verdict for the whole claim from its subclaim judgments.

The rule (a claim is supported only if every part is):

1. DISPUTED when one subclaim is SUPPORTS and another REFUTES, or when a subclaim's own
   evidence strongly goes both ways (:func:`claimfsm.skills.stance.combine.is_disputed`);
2. SUPPORTS when every subclaim is SUPPORTS;
3. REFUTES when some subclaim is REFUTES (and none SUPPORTS);
4. NOT_ENOUGH_INFO otherwise (all NOT_ENOUGH_INFO, or SUPPORTS mixed with
   NOT_ENOUGH_INFO). A subclaim without a judgment counts as NOT_ENOUGH_INFO.

With a learned stance model (``stance_model``, see :mod:`claimfsm.skills.stance.learned`) the
dataset's own rule applies to every judged sentence of every subclaim, with the clear
labels the model's cross-validated thresholds gave: DISPUTED when some sentence clearly
supports and another clearly refutes, else SUPPORTS if any does, else REFUTES if any
does, else NOT_ENOUGH_INFO. When that model has a claim-level verdict head
(:mod:`claimfsm.skills.stance.verdict_head`), the head labels the claim instead, from the claim's
wording and its ranked evidence (``claim`` and ``evidence``, given only with a model).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_extract import Claim, EvidenceItem
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_LIST, MAX_SUBCLAIMS
from claimfsm.skills.stance.combine import CHECK_PREFIX, is_disputed
from claimfsm.skills.stance.config import DEFAULT_CONFIG, THRESHOLDS, StanceConfig, Thresholds
from claimfsm.skills.stance_judge import Judgment, Learned, load_learned
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = [
    "SKILL",
    "WARNING_PREFIX",
    "Input",
    "Output",
    "Verdict",
    "VerdictLabel",
    "aggregate",
    "handler",
    "warnings",
]

WARNING_PREFIX = "warning: "
"""A verdict reason ``"warning: <subclaim id>: <check>: <detail> [<evidence id>]"`` names
the alignment check that kept a subclaim from SUPPORTS (or made it REFUTES), e.g.
``warning: s1: number not confirmed: 1850 [canberra#0]``; the checks are
:data:`claimfsm.skills.stance.align.CHECKS` (docs/judge.md)."""

NEXT = "DONE"
VerdictLabel = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED"]


class Verdict(BaseIO):
    """The claim's label, the reasons for it, and every citation behind it."""

    label: VerdictLabel
    reasons: list[str]
    cites: list[str]


class Input(BaseIO):
    """Subclaims (for order and completeness) and their judgments."""

    claims: list[Claim] = Field(default_factory=list, max_length=MAX_SUBCLAIMS)
    judgments: list[Judgment] = Field(max_length=MAX_LIST)
    profile: Thresholds = "default"
    """The threshold set whose dispute thresholds apply (as in ``stance_judge``)."""
    stance_model: str | None = None
    """The learned model the judgments came from (as in ``stance_judge``)."""
    claim: str | None = Field(None, max_length=MAX_CLAIM_CHARS)
    """The whole claim's text: read by a model's claim-level verdict head only."""
    evidence: dict[str, list[EvidenceItem]] = Field(default_factory=dict)
    """Ranked evidence per subclaim: read by a model's claim-level verdict head only."""
    st: StRef


class Output(BaseIO):
    """The verdict."""

    verdict: Verdict


def _label(judgments: list[Judgment], config: StanceConfig) -> tuple[VerdictLabel, str]:
    verdicts = [j.verdict for j in judgments]
    torn = [j.id for j in judgments
            if is_disputed(((s.label, s.score) for s in j.stances), config)]
    if "SUPPORTS" in verdicts and "REFUTES" in verdicts:
        return "DISPUTED", "subclaims disagree: some supported, some refuted"
    if torn:
        return "DISPUTED", "evidence strongly goes both ways for " + ", ".join(torn)
    if all(v == "SUPPORTS" for v in verdicts):
        return "SUPPORTS", "every subclaim is supported"
    if "REFUTES" in verdicts:
        return "REFUTES", "a subclaim is refuted and none is supported"
    if "SUPPORTS" in verdicts:
        return "NOT_ENOUGH_INFO", "only part of the claim is supported"
    return "NOT_ENOUGH_INFO", "no subclaim is clearly supported or refuted"


def _label_learned(judgments: list[Judgment]) -> tuple[VerdictLabel, str]:
    labels = {s.label for j in judgments for s in j.stances}
    if {"SUPPORTS", "REFUTES"} <= labels:
        return "DISPUTED", "model: evidence clearly goes both ways"
    if "SUPPORTS" in labels:
        return "SUPPORTS", "model: a sentence clearly supports the claim"
    if "REFUTES" in labels:
        return "REFUTES", "model: a sentence clearly refutes the claim and none supports it"
    return "NOT_ENOUGH_INFO", "model: no sentence clearly supports or refutes the claim"


def _detail(j: Judgment) -> str:
    # The judge puts a count summary first and the specific reasons (cited sentences,
    # "goes both ways") after it; the most specific one explains the verdict best.
    if not j.reasons:
        return ""
    return ": " + (j.reasons[1] if len(j.reasons) > 1 else j.reasons[0])


def _warnings(j: Judgment) -> list[str]:
    out = []
    for r in j.reasons:
        if r.startswith(CHECK_PREFIX):
            eid, _, check = r[len(CHECK_PREFIX):].partition(": ")
            out.append(f"{WARNING_PREFIX}{j.id}: {check} [{eid}]")
    return out


def warnings(verdict: Verdict) -> list[tuple[str, str, str, str]]:
    """``(subclaim id, check, detail, evidence id)`` for each warning reason of
    ``verdict`` (for a display that shows them apart from the other reasons)."""
    out = []
    for r in verdict.reasons:
        if not r.startswith(WARNING_PREFIX) or not r.endswith("]"):
            continue
        sid, _, rest = r[len(WARNING_PREFIX):].partition(": ")
        body, _, eid = rest[:-1].rpartition(" [")
        check, _, detail = body.partition(": ")
        out.append((sid, check, detail, eid))
    return out


def aggregate(
    claims: list[Claim], judgments: list[Judgment], config: StanceConfig = DEFAULT_CONFIG,
    *, learned: bool = False,
) -> Verdict:
    """Apply the rule above (``learned``: the dataset's rule over the model's clear
    sentence labels); judgments follow claim order (unjudged claims are NEI)."""
    by_id = {j.id: j for j in judgments}
    order = [c.id for c in claims] or [j.id for j in judgments]
    filled = [
        by_id.get(sid) or Judgment(id=sid, verdict="NOT_ENOUGH_INFO", confidence=1.0,
                                   reasons=["not judged"])
        for sid in order
    ]
    label, why = _label_learned(filled) if learned else _label(filled, config)
    reasons = [why] + [f"{j.id}: {j.verdict} ({j.confidence:.2f}){_detail(j)}" for j in filled]
    if label != "SUPPORTS" and not learned:
        reasons += [w for j in filled for w in _warnings(j)]
    cites = list(dict.fromkeys(c for j in filled for c in j.cites))
    return Verdict(label=label, reasons=reasons, cites=cites)


def _head_verdict(inp: Input, learned: Learned) -> Verdict | str | None:
    """The claim-level head's verdict; a reason string when the head cannot run here;
    None when the model has no head (or the input carries no claim text)."""
    model, feat = learned.model, learned.featurizer
    if model is None or feat is None or model.verdict is None or inp.claim is None:
        return None
    from claimfsm.skills.stance.learned import head_embedder, head_inputs, judge_claim

    emb, why_not = head_embedder(model)
    if why_not is not None:
        return why_not
    ev = {sid: [(e.id, e.text) for e in items] for sid, items in inp.evidence.items()}
    subs = [(c.id, c.c) for c in inp.claims] or [(j.id, inp.claim) for j in inp.judgments]
    cv = judge_claim(inp.claim, head_inputs(subs, ev, model.verdict.top), model, feat, emb)
    label: VerdictLabel = cv.label  # type: ignore[assignment]
    return Verdict(label=label, reasons=list(cv.reasons), cites=list(cv.cites))


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """One verdict for the claim; ``NO_JUDGMENTS`` if there is nothing to aggregate."""
    if not inp.judgments:
        return Envelope.error("NO_JUDGMENTS", "judgments: empty list", rb="state")
    known = {c.id for c in inp.claims}
    seen: set[str] = set()
    for n, j in enumerate(inp.judgments):
        if known and j.id not in known:
            return Envelope.error(
                "UNKNOWN_CLAIM", f"judgments.{n}.id: '{j.id}' is not a claim id", rb="state"
            )
        if j.id in seen:
            return Envelope.error(
                "DUPLICATE_JUDGMENT", f"judgments.{n}.id: '{j.id}' judged twice", rb="state"
            )
        seen.add(j.id)
    learned = load_learned(inp.stance_model) if inp.stance_model is not None else None
    if learned is not None and learned.error is not None:
        return Envelope.error(*learned.error, rb="state")
    head = _head_verdict(inp, learned) if learned is not None else None
    if isinstance(head, Verdict):
        verdict = head
    else:
        verdict = aggregate(inp.claims, inp.judgments, THRESHOLDS[inp.profile],
                            learned=learned is not None and learned.model is not None)
    notes = [n for n in (learned.fallback if learned else None,
                         head if isinstance(head, str) else None) if n]
    if notes:
        verdict = verdict.model_copy(update={"reasons": [*verdict.reasons, *notes]})
    out = Output(verdict=verdict)
    return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1, fsm=NEXT)


SKILL: Skill[Input, Output] = Skill(
    name="verdict_aggregate",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="state",
    description="One verdict for the claim (SUPPORTS, REFUTES, NOT_ENOUGH_INFO or "
    "DISPUTED) from its subclaim judgments, with reasons and citations.",
    version=SKILL_VERSIONS["verdict_aggregate"],
)
