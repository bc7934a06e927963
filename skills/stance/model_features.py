"""Features of a (claim, sentence) pair for the learned stance model.

Lexical features come from the same explainable signals as the lexical judge
(:mod:`claimfsm.skills.stance.features`): key-term coverage, numbers that agree or clash, negation,
direction of change and antonyms, hedges, plus the lexical judge's own verdict. Each has a
short name, so the model's reasons can say which features carried a prediction. Dense
features (cosine, ``u*v``, ``|u-v|`` of sentence embeddings) are added by
:mod:`claimfsm.skills.stance.model` when the model was trained with an embedder.
"""

from __future__ import annotations

import math

from claimfsm.skills.stance.align import align
from claimfsm.skills.stance.config import CALIBRATED_CONFIG
from claimfsm.skills.stance.features import (
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
from claimfsm.skills.stance.lexical import sentence_stance
from claimfsm.skills.stance.lexicon import POST_NEGATIONS, PRE_NEGATIONS
from claimfsm.skills.stance.names import argument_check, entity_check
from claimfsm.skills.stance.numbers import compare_numbers

__all__ = ["LEXICAL_FEATURES", "lexical_features"]

# Words that, in a claim, mark a contrarian framing and, in a sentence, a correction.
_CONTRARIAN = frozenset({
    "hoax", "myth", "scam", "fraud", "alarmist", "alarmism", "exaggerated", "exaggerate",
    "exaggeration", "lie", "lies", "propaganda", "fake", "natural", "cycle", "cycles",
    "sun", "solar", "cooling", "pause", "hiatus", "benefit", "beneficial", "good",
})
_CORRECTION = frozenset({
    "however", "but", "although", "contrary", "despite", "consensus", "misleading",
    "incorrect", "false", "disputed", "rejected", "refuted", "debunked", "unlikely",
})
_CAUSAL = frozenset({"cause", "causes", "caused", "causing", "due", "driven", "because",
                     "result", "results", "resulted", "lead", "leads", "led"})

LEXICAL_FEATURES: tuple[str, ...] = (
    "relevance", "predicate_coverage", "terms_covered", "entities_covered",
    "entities_missing", "claim_terms", "sentence_terms_share", "jaccard",
    "numbers_agree", "numbers_clash", "numbers_unconfirmed", "claim_has_number",
    "sentence_has_number",
    "sentence_denies", "claim_denies_shared", "claim_denies_any", "claim_negation",
    "sentence_negation", "negation_flip",
    "direction_agree", "direction_clash", "antonym_clash", "unstated_change",
    "entity_mismatch", "other_entity", "sentence_hedge", "claim_hedge",
    "claim_contrarian", "sentence_correction", "claim_causal", "sentence_causal",
    "rel_x_clash", "rel_x_negation_flip", "rel_x_contrarian",
    "lexical_supports", "lexical_refutes", "lexical_nei",
    "claim_length", "sentence_length",
    "align_role_swapped", "align_role_refutes", "align_quantifier", "align_entity_missing",
    "align_argument_missing", "align_blocks", "align_refutes",
)
"""Names of :func:`lexical_features`, in order."""


def _negated(tokens: list[str]) -> bool:
    return any(t in PRE_NEGATIONS or t in POST_NEGATIONS or t.endswith("n't") for t in tokens)


def lexical_features(claim: str, sentence: str) -> list[float]:
    """One row of :data:`LEXICAL_FEATURES` for the pair; deterministic, no model."""
    cfg = CALIBRATED_CONFIG
    ca, sa = analyze(claim), analyze(sentence)
    terms = claim_terms(ca)
    cov = coverage(terms, sa)
    total = sum(cfg.entity_weight if t.entity else 1.0 for t in terms)
    rel = sum(cfg.entity_weight if t.entity else 1.0 for t in cov.covered) / total if total else 0.0
    preds = [t for t in terms if not t.entity]
    pc = sum(1 for t in cov.covered if not t.entity) / len(preds) if preds else 1.0
    ents = [t for t in terms if t.entity]
    ent_cov = sum(1 for t in cov.covered if t.entity)
    cterms, sterms = ca.terms, sa.terms
    union = cterms | sterms
    nums = compare_numbers(ca.numbers, sa.numbers, cfg.number_rel_tol)
    dir_clash, dir_agree = direction_check(ca, sa)
    key = frozenset(i for i, t in enumerate(ca.tokens) if t.term in {c.term for c in terms})
    shared = {ct.term for ct in cov.covered}
    win = cfg.negation_window
    c_neg = denial(ca, frozenset(i for i in key if ca.tokens[i].term in shared), win,
                   content=key)
    c_any = denial(ca, key, win, content=key)
    s_neg = denial(sa, cov.positions, win)
    clow = [t.low for t in ca.tokens]
    slow = [t.low for t in sa.tokens]
    c_negated, s_negated = _negated(clow), _negated(slow)
    flip = float(c_negated != s_negated)
    clash = float(bool(nums.clash) or dir_clash is not None
                  or antonym_clash(ca, sa) is not None)
    contrarian = float(bool(_CONTRARIAN.intersection(clow)))
    lex = sentence_stance(claim, sentence, cfg)
    row = [
        rel, pc, len(cov.covered) / len(terms) if terms else 0.0,
        ent_cov / len(ents) if ents else 0.0, float(len(ents) - ent_cov),
        math.log1p(len(terms)),
        len(sterms & cterms) / len(sterms) if sterms else 0.0,
        len(cterms & sterms) / len(union) if union else 0.0,
        float(bool(nums.agree)), float(bool(nums.clash)), float(bool(nums.unconfirmed)),
        float(bool(ca.numbers)), float(bool(sa.numbers)),
        float(s_neg is not None), float(c_neg is not None), float(c_any is not None),
        float(c_negated), float(s_negated), flip,
        float(dir_agree is not None), float(dir_clash is not None),
        float(antonym_clash(ca, sa) is not None), float(unstated_change(ca, sa) is not None),
        float(entity_mismatch(terms, cov, sa) is not None),
        float(other_entity(cov, sa) is not None),
        float(hedge(sa) is not None), float(hedge(ca) is not None),
        contrarian, float(bool(_CORRECTION.intersection(slow))),
        float(bool(_CAUSAL.intersection(clow))), float(bool(_CAUSAL.intersection(slow))),
        rel * clash, rel * flip, rel * contrarian,
        lex.score if lex.label == "SUPPORTS" else 0.0,
        lex.score if lex.label == "REFUTES" else 0.0,
        lex.score if lex.label == "NOT_ENOUGH_INFO" else 0.0,
        math.log1p(len(ca.tokens)), math.log1p(len(sa.tokens)),
    ]
    # The alignment checks of the lexical judge (skills/stance/align.py), one flag each.
    checks = align(claim, ca, sa, frozenset(t.term for t in terms))
    names = {c.name for c in checks}
    if entity_check(claim, sa) is not None:
        names.add("entity not mentioned")
    if argument_check(ca, sa, frozenset(t.term for t in terms)) is not None:
        names.add("argument not mentioned")
    row += [
        float("role swapped" in names),
        float(any(c.name == "role swapped" and c.refutes for c in checks)),
        float(bool(names & {"quantifier differs", "quantifier not confirmed"})),
        float("entity not mentioned" in names), float("argument not mentioned" in names),
        float(sum(1 for c in checks if not c.refutes) + bool(nums.unconfirmed)),
        float(any(c.refutes for c in checks)),
    ]
    return row
