"""VERIFY: judge each subclaim against its evidence sentences.

Every evidence sentence gets a stance (:func:`claimfsm.skills.stance.lexical.sentence_stance`); the
stances combine (:func:`claimfsm.skills.stance.combine.combine_stances`) into SUPPORTS or REFUTES
when the evidence says so clearly, citing the sentences the verdict rests on, and NOT_ENOUGH_INFO
otherwise (also when a subclaim has no evidence).

With ``stance_model`` (a file written by ``claimfsm train``) the learned model judges
instead (:mod:`claimfsm.skills.stance.learned`); when the model cannot run here (its embedder or
numpy is missing) the lexical judge does, and every judgment says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.evidence_extract import Claim, EvidenceItem
from claimfsm.skills.limits import MAX_EVIDENCE_PER_CLAIM, MAX_SUBCLAIMS
from claimfsm.skills.stance.combine import CHECK_PREFIX, Combined, combine_stances
from claimfsm.skills.stance.config import DEFAULT_CONFIG, THRESHOLDS, StanceConfig, Thresholds
from claimfsm.skills.stance.lexical import Label, Stance, sentence_stance, title_terms
from claimfsm.skills.stance.names import acronyms, initials, together
from claimfsm.skills.versions import SKILL_VERSIONS

if TYPE_CHECKING:
    from claimfsm.skills.stance.model import Featurizer, StanceModel

__all__ = [
    "SKILL",
    "Input",
    "Judgment",
    "Learned",
    "Output",
    "StanceRecord",
    "handler",
    "judge",
    "load_learned",
]

NEXT = "AGGREGATE"


class StanceRecord(BaseIO):
    """One evidence sentence's stance on the subclaim."""

    id: str
    label: Label
    score: float


class Judgment(BaseIO):
    """A subclaim's verdict, how sure, the evidence it rests on, and why."""

    id: str = Field(min_length=1)
    verdict: Label
    confidence: float = Field(ge=0, le=1)
    cites: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    stances: list[StanceRecord] = Field(default_factory=list)


Evidence = Annotated[list[EvidenceItem], Field(max_length=MAX_EVIDENCE_PER_CLAIM)]
"""One subclaim's evidence sentences."""


class Input(BaseIO):
    """Subclaims and their evidence (as produced by ``evidence_extract``)."""

    claims: list[Claim] = Field(max_length=MAX_SUBCLAIMS)
    evidence: dict[str, Evidence] = Field(default_factory=dict, max_length=MAX_SUBCLAIMS)
    profile: Thresholds = "default"
    """Which calibrated thresholds to judge with
    (:data:`claimfsm.skills.stance.config.THRESHOLDS`)."""
    stance_model: str | None = None
    """A model file from ``claimfsm train``: the learned judge instead of the lexical one."""
    st: StRef


class Output(BaseIO):
    """One judgment per subclaim, in claim order."""

    judgments: list[Judgment]


def _named_together(claim: str, evidence: list[EvidenceItem],
                    judged: list[tuple[str, Stance]], combined: Combined) -> Combined:
    """SUPPORTS only when the supporting sentences (and their documents' titles) together
    name every entity of the claim and both sides of its predicate
    (:func:`claimfsm.skills.stance.align.together`); else NOT_ENOUGH_INFO, naming the check."""
    if combined.verdict != "SUPPORTS":
        return combined
    wanted = acronyms(claim)  # "IPCC" is named by a title "Intergovernmental Panel on ..."
    backing = [(item.text, title_terms(item.doc_id)
                | initials(item.doc_id.split("#", 1)[0].rsplit(":", 1)[0], wanted))
               for item, (_, st) in zip(evidence, judged, strict=True) if st.label == "SUPPORTS"]
    missing = together(claim, backing)
    if missing is None:
        return combined
    eid = combined.cites[0] if combined.cites else "-"
    return Combined(verdict="NOT_ENOUGH_INFO", confidence=round(1 - combined.confidence, 4),
                    cites=combined.cites,
                    reasons=(*combined.reasons[:1], "the supporting sentences do not name "
                             "everything the claim is about",
                             f"{CHECK_PREFIX}{eid}: {missing.reason}"))


def judge(
    claim: Claim, evidence: list[EvidenceItem], config: StanceConfig = DEFAULT_CONFIG
) -> Judgment:
    """Judge one subclaim: a stance per sentence, combined into a verdict."""
    judged = [(item.id, sentence_stance(claim.c, item.text, config, title=item.doc_id))
              for item in evidence]
    combined = _named_together(claim.c, evidence, judged, combine_stances(judged, config))
    return Judgment(
        id=claim.id,
        verdict=combined.verdict,
        confidence=combined.confidence,
        cites=list(combined.cites),
        reasons=list(combined.reasons),
        stances=[StanceRecord(id=eid, label=st.label, score=st.score) for eid, st in judged],
    )


@dataclass(frozen=True)
class Learned:
    """The learned judge, ready (``model``, ``featurizer``), or why the lexical judge runs
    instead (``fallback``), or why neither can (``error``: code, message)."""

    model: StanceModel | None = None
    featurizer: Featurizer | None = None
    fallback: str | None = None
    error: tuple[str, str] | None = None


def load_learned(path: str) -> Learned:
    """Load a model file for judging (cached per path)."""
    try:
        from claimfsm.skills.stance import learned as stance_learned
    except ImportError as exc:
        return Learned(fallback=f"stance model needs numpy ({exc.name} is not installed): "
                       "lexical judge used")
    from claimfsm.skills.stance.model import ModelError

    try:
        model, feat, reason = stance_learned.load(path)
    except ModelError:
        # One answer for a missing, unreadable or foreign file: a skill input must not
        # tell its caller which files exist (the CLI, on the user's own paths, says more).
        return Learned(error=("MODEL_UNAVAILABLE", "stance_model: no usable claimfsm model "
                              "at this path (missing, unreadable or another format)"))
    return Learned(fallback=reason) if feat is None else Learned(model=model, featurizer=feat)


def _judge_learned(claim: Claim, evidence: list[EvidenceItem], learned: Learned) -> Judgment:
    from claimfsm.skills.stance.learned import judge_sentences

    assert learned.model is not None and learned.featurizer is not None
    lj = judge_sentences(claim.c, [(e.id, e.text) for e in evidence], learned.model,
                         learned.featurizer)
    return Judgment(id=claim.id, verdict=lj.verdict, confidence=lj.confidence,
                    cites=list(lj.cites), reasons=list(lj.reasons),
                    stances=[StanceRecord(id=i, label=lab, score=s) for i, lab, s in lj.stances])


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Judge every subclaim; evidence under unknown ids is ignored."""
    if not inp.claims:
        return Envelope.error("NO_CLAIMS", "claims: empty list", rb="state")
    ids = [c.id for c in inp.claims]
    dup = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
    if dup is not None:
        return Envelope.error("DUPLICATE_CLAIM", f"claims: duplicate id '{dup}'", rb="state")
    config = THRESHOLDS[inp.profile]
    learned = load_learned(inp.stance_model) if inp.stance_model is not None else None
    if learned is not None and learned.error is not None:
        return Envelope.error(*learned.error, rb="state")
    if learned is not None and learned.model is not None:
        judgments = [_judge_learned(c, inp.evidence.get(c.id, []), learned)
                     for c in inp.claims]
    else:
        judgments = [judge(c, inp.evidence.get(c.id, []), config) for c in inp.claims]
        if learned is not None and learned.fallback:
            note = learned.fallback
            judgments = [j.model_copy(update={"reasons": [*j.reasons, note]})
                         for j in judgments]
    out = Output(judgments=judgments)
    return Envelope.ok(out.model_dump(mode="json"), rev=inp.st.rev + 1, fsm=NEXT)


SKILL: Skill[Input, Output] = Skill(
    name="stance_judge",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="state",
    description="Judge each subclaim against its evidence: SUPPORTS, REFUTES or "
    "NOT_ENOUGH_INFO, citing the sentences it rests on.",
    version=SKILL_VERSIONS["stance_judge"],
)
