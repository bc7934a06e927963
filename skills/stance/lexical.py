"""The stance judge: does a sentence support, refute, or say nothing about a claim?

Lexical and explainable, no model and no downloads. A sentence must first be *about*
the claim (weighted key-term coverage, names count more); then it refutes when a claim
number is replaced by a different one of the same quantity, when one side denies what
the other asserts, when the two point in opposite directions (rise vs fall) or use an
antonym, or when an exclusive relation (capital, largest, born) holds for another name;
otherwise it supports when it covers the claim's key terms and confirms its numbers.
Hedged sentences count less. Every threshold is in :mod:`claimfsm.skills.stance.config`;
:mod:`claimfsm.skills.stance.combine` turns the stances of a subclaim's sentences into a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict

from claimfsm.skills.stance.align import Check, align
from claimfsm.skills.stance.config import DEFAULT_CONFIG, StanceConfig
from claimfsm.skills.stance.features import (
    Analysis,
    ClaimTerm,
    Coverage,
    analyze,
    antonym_clash,
    claim_terms,
    coverage,
    denial,
    direction_check,
    entity_mismatch,
    hedge,
    other_entity,
    unstated_change,
)
from claimfsm.skills.stance.numbers import NumberCheck, compare_numbers

__all__ = [
    "LABELS",
    "Label",
    "Stance",
    "relevance",
    "sentence_stance",
    "title_terms",
]

Label = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"]
LABELS: tuple[Label, ...] = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO")


class Stance(BaseModel):
    """One sentence's stance on a claim. ``score`` is the strength of the label in
    ``[0, 1]``; for NOT_ENOUGH_INFO it is how far the sentence falls short of a verdict."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    label: Label
    score: float
    reasons: tuple[str, ...]


def _relevance(
    terms: Sequence[ClaimTerm], cov: Coverage, config: StanceConfig
) -> tuple[float, float, str]:
    """(weighted coverage, predicate coverage, "key terms k/n")."""
    total = sum(config.entity_weight if t.entity else 1.0 for t in terms)
    got = sum(config.entity_weight if t.entity else 1.0 for t in cov.covered)
    preds = sum(1 for t in terms if not t.entity)
    pred_got = sum(1 for t in cov.covered if not t.entity)
    pc = pred_got / preds if preds else 1.0
    return (got / total if total else 0.0), pc, f"key terms {len(cov.covered)}/{len(terms)}"


def relevance(claim: str, sentence: str, config: StanceConfig = DEFAULT_CONFIG) -> float:
    """Weighted share of the claim's key terms the sentence covers, rounded."""
    terms = claim_terms(analyze(claim))
    return round(_relevance(terms, coverage(terms, analyze(sentence)), config)[0],
                 config.places)


def title_terms(doc_id: str) -> frozenset[str]:
    """The terms of a document id read as a title: ``"Arctic sea ice:12"`` or
    ``"apollo-11"`` -> the terms of its words (the sentence index left out)."""
    head = doc_id.split("#", 1)[0].rsplit(":", 1)[0]
    return analyze(head.replace("-", " ").replace("_", " ")).terms if head else frozenset()


def _clip(x: float) -> float:
    return max(0.0, min(1.0, x))


Denied = tuple[str, str] | None


def _denials(
    ca: Analysis, sa: Analysis, terms: Sequence[ClaimTerm], cov: Coverage,
    config: StanceConfig,
) -> tuple[Denied, Denied, Denied]:
    """(claim denies a shared term, claim denies anything, sentence denies a shared term)."""
    key = frozenset(i for i, t in enumerate(ca.tokens) if t.term in {c.term for c in terms})
    shared = {ct.term for ct in cov.covered}
    window = config.negation_window
    c_neg = denial(ca, frozenset(i for i in key if ca.tokens[i].term in shared), window,
                   content=key)
    c_any = denial(ca, key, window, content=key)
    return c_neg, c_any, denial(sa, cov.positions, window)


def _contradictions(
    sa: Analysis, terms: Sequence[ClaimTerm], cov: Coverage, nums: NumberCheck,
    negs: tuple[Denied, Denied], opposite: tuple[str, str] | None, dir_clash: bool,
    checks: tuple[Check, ...], config: StanceConfig,
) -> tuple[float, list[str]]:
    """The summed weight of every refuting signal, and a reason for each."""
    weight, reasons = 0.0, []
    for check in checks:
        if check.refutes:
            weight += config.alignment_weight
            reasons.append(check.reason)
    if nums.clash:
        weight += config.number_clash_weight
        reasons.append("numbers clash: " + ", ".join(f"{c} vs {s}" for c, s in nums.clash))
    c_neg, s_neg = negs
    negation_flip = (c_neg is None) != (s_neg is None)
    if negation_flip and opposite:
        reasons.append("negation and opposite wording cancel")
    elif s_neg is not None and c_neg is None:
        weight += config.negation_weight
        reasons.append(f"negation: sentence denies '{s_neg[1]}' ('{s_neg[0]}')")
    elif c_neg is not None and s_neg is None:
        weight += config.negation_weight
        reasons.append(f"negation: claim denies '{c_neg[1]}', sentence asserts it")
    elif opposite:
        weight += config.antonym_weight
        kind = "direction" if dir_clash else "antonym"
        reasons.append(f"{kind}: claim '{opposite[0]}' vs sentence '{opposite[1]}'")
    mismatch = entity_mismatch(terms, cov, sa)
    if mismatch:
        weight += config.entity_mismatch_weight
        reasons.append(f"entity mismatch: claim '{mismatch[0]}' vs sentence "
                       f"'{mismatch[1]}' ({mismatch[2]})")
    return weight, reasons


def sentence_stance(
    claim: str, sentence: str, config: StanceConfig = DEFAULT_CONFIG, *, title: str = ""
) -> Stance:
    """Judge one sentence against one claim; deterministic, with short reasons.
    ``title``: the sentence's document title (or id), which names what the sentence is
    about for the entity and argument checks only."""
    ca, sa = analyze(claim), analyze(sentence)
    terms = claim_terms(ca)
    cov = coverage(terms, sa)
    rel, pc, matched = _relevance(terms, cov, config)

    def verdict(label: Label, score: float, *why: str) -> Stance:
        return Stance(label=label, score=round(_clip(score), config.places), reasons=why)

    if rel < config.min_relevance:
        return verdict("NOT_ENOUGH_INFO", 1 - rel, f"low relevance: {matched}")
    elsewhere = other_entity(cov, sa)
    if elsewhere is not None:
        return verdict("NOT_ENOUGH_INFO", 1 - rel, matched,
                       f"another entity: claim '{elsewhere[0]}' vs sentence '{elsewhere[1]}'")
    if pc < config.min_predicate_coverage:
        missing = ", ".join(f"'{t.word}'" for t in cov.missing if not t.entity)
        return verdict("NOT_ENOUGH_INFO", 1 - rel * pc, matched,
                       f"predicate not covered: {missing}")

    nums = compare_numbers(ca.numbers, sa.numbers, config.number_rel_tol)
    dir_clash, dir_agree = direction_check(ca, sa)
    opposite = dir_clash or antonym_clash(ca, sa)
    if rel < config.clash_min_relevance:
        # Too loosely about the claim for its numbers and directions to contradict it.
        nums = replace(nums, clash=(), unconfirmed=nums.unconfirmed + tuple(
            c for c, _ in nums.clash))
        opposite = dir_clash = None
    c_neg, c_any, s_neg = _denials(ca, sa, terms, cov, config)
    checks = align(claim, ca, sa, frozenset(t.term for t in terms), title_terms(title))
    refute, why = _contradictions(sa, terms, cov, nums, (c_neg, s_neg), opposite,
                                  dir_clash is not None, checks, config)
    reasons = [matched, *why]
    hedged = hedge(sa) if hedge(ca) is None else None
    factor = config.hedge_factor if hedged else 1.0
    if hedged:
        reasons.append(f"hedged: '{hedged}'")

    if refute > 0:
        score = _clip(config.refute_relevance_weight * rel + refute) * factor
        if score >= config.refute_min:
            return verdict("REFUTES", score, *reasons)
        return verdict("NOT_ENOUGH_INFO", 1 - score, *reasons, "contradiction too weak")

    if c_any is not None and c_neg is None and s_neg is None:
        # "No human landed on Mars" vs "a rover landed on Mars": the sentence says
        # nothing about what the claim denies.
        return verdict("NOT_ENOUGH_INFO", 1 - rel, *reasons,
                       f"claim denies '{c_any[1]}', which the sentence does not mention")
    support = rel
    blocks = [c.reason for c in checks if not c.refutes]
    if nums.unconfirmed:
        factor *= config.unconfirmed_number_factor
        reasons.append("number not confirmed: " + ", ".join(nums.unconfirmed))
    elif nums.agree:
        support += config.number_agree_bonus
        reasons.append("numbers agree: " + ", ".join(nums.agree))
    if dir_agree:
        support += config.direction_agree_bonus
        reasons.append(f"direction agrees: '{dir_agree[0]}' ~ '{dir_agree[1]}'")
    score = _clip(support) * factor
    change = unstated_change(ca, sa)
    if change is not None:
        return verdict("NOT_ENOUGH_INFO", 1 - score, *reasons, f"change not stated: '{change}'")
    if score >= config.support_min and (blocks or nums.unconfirmed):
        # A fact with a number is confirmed only with the number: "Canberra became the
        # capital in 1850" is not supported by a sentence that never says 1850.
        return verdict("NOT_ENOUGH_INFO", 1 - score, *reasons, *blocks)
    if score >= config.support_min:
        return verdict("SUPPORTS", score, *reasons)
    return verdict("NOT_ENOUGH_INFO", 1 - score, *reasons, "support too weak")
