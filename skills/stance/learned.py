"""Judging with the learned stance model (:mod:`claimfsm.skills.stance.model`), when one is given.

Imported only when a session names a model file, so the default engine needs no numpy.
Per subclaim, the model judges the first ``model.top`` evidence sentences (EXTRACT ranks
them); a sentence is a clear SUPPORTS or REFUTES when its probability passes the
threshold chosen by cross-validation. The subclaim's verdict follows the dataset's rule:
both sides clear -> NOT_ENOUGH_INFO marked disputed (the claim becomes DISPUTED),
otherwise SUPPORTS if any, else REFUTES if any, else NOT_ENOUGH_INFO. Every cited
sentence's reason gives its probability and the features that carried it.

When the model has a claim-level verdict head (:mod:`claimfsm.skills.stance.verdict_head`),
AGGREGATE asks :func:`judge_claim` instead of applying the sentence rule: it reads every
subclaim's first ``head.top`` sentences, cites the best five on the side it chose, and
says why in terms of the head's features and the sentences' probabilities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from claimfsm.skills.stance.lexical import LABELS, Label
from claimfsm.skills.stance.model import (
    Embedder,
    Featurizer,
    StanceModel,
    cached_model,
    resolve_embedder,
)
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES, lexical_features
from claimfsm.skills.stance.verdict_head import VERDICTS, claim_row

__all__ = [
    "ClaimVerdict",
    "LearnedJudgment",
    "head_embedder",
    "head_inputs",
    "judge_claim",
    "judge_sentences",
    "load",
]


@dataclass(frozen=True)
class LearnedJudgment:
    """A subclaim's verdict from the model, with per-sentence ``(id, label, p)``."""

    verdict: Label
    confidence: float
    cites: tuple[str, ...]
    reasons: tuple[str, ...]
    stances: tuple[tuple[str, Label, float], ...]


def load(path: str) -> tuple[StanceModel, Featurizer | None, str | None]:
    """:func:`claimfsm.skills.stance.model.cached_model` (raises ``ModelError``)."""
    return cached_model(path)


def judge_sentences(
    claim: str, evidence: Sequence[tuple[str, str]], model: StanceModel,
    featurizer: Featurizer, *, places: int = 4, max_cites: int = 3,
) -> LearnedJudgment:
    """Judge ``(id, text)`` evidence sentences against one claim."""
    items = list(evidence)[: model.top]
    if not items:
        return LearnedJudgment("NOT_ENOUGH_INFO", 1.0, (), ("no evidence",), ())
    x = featurizer.matrix([(claim, text) for _, text in items])
    probs = model.probabilities(x)
    judged = []
    for (eid, _), row, p in zip(items, x, probs, strict=True):
        label, score = model.label(p)
        judged.append((eid, label, round(score, places), row))
    stances = tuple((eid, lab, s) for eid, lab, s, _ in judged)
    side = {lab: sorted(((s, n) for n, (_, lb, s, _) in enumerate(judged) if lb == lab),
                        key=lambda t: (-t[0], t[1]))
            for lab in ("SUPPORTS", "REFUTES")}
    sup, ref = side["SUPPORTS"], side["REFUTES"]
    counts = (f"model: {len(items)} sentences: {len(sup)} clearly support "
              f"(p >= {model.support_t}), {len(ref)} clearly refute (p >= {model.refute_t})")

    def why(n: int) -> str:
        eid, lab, s, row = judged[n]
        top = ", ".join(model.explain(row, lab)) or "no single feature"
        return f"{eid}: p({lab})={s:.2f}; {top}"

    if sup and ref:
        cites = (judged[sup[0][1]][0], judged[ref[0][1]][0])
        return LearnedJudgment("NOT_ENOUGH_INFO", round(1 - max(sup[0][0], ref[0][0]), places),
                               cites, (counts, "evidence goes both ways (disputed)",
                                       why(sup[0][1]), why(ref[0][1])), stances)
    for label, win in (("SUPPORTS", sup), ("REFUTES", ref)):
        if win:
            top_n = [n for _, n in win[:max_cites]]
            return LearnedJudgment(label, win[0][0], tuple(judged[n][0] for n in top_n),
                                   (counts, *(why(n) for n in top_n)), stances)
    best = int(np.argmax(probs[:, 2]))
    return LearnedJudgment("NOT_ENOUGH_INFO", round(float(probs[best, 2]), places), (),
                           (counts, "no sentence clearly supports or refutes"), stances)



@dataclass(frozen=True)
class ClaimVerdict:
    """The verdict head's label for the whole claim, its reasons and cited sentences."""

    label: str
    p: float
    cites: tuple[str, ...]
    reasons: tuple[str, ...]


def head_inputs(
    subclaims: Sequence[tuple[str, str]], evidence: Mapping[str, Sequence[tuple[str, str]]],
    top: int,
) -> list[tuple[str, str, str]]:
    """``(sentence id, subclaim text, sentence text)`` for the first ``top`` ranked
    sentences of every subclaim, in subclaim order (a sentence once, first place)."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for sid, text in subclaims:
        for eid, sent in list(evidence.get(sid, ()))[:top]:
            if eid not in seen:
                seen.add(eid)
                out.append((eid, text, sent))
    return out


def head_embedder(model: StanceModel) -> tuple[Embedder | None, str | None]:
    """The head's embedder (None when it has none), or why the head cannot run here."""
    head = model.verdict
    if head is None or head.embedder is None:
        return None, None
    emb = resolve_embedder(head.embedder)
    if emb is None:
        return None, (f"verdict head needs embedder '{head.embedder}', which is not "
                      "available: sentence rule used")
    return emb, None


def judge_claim(
    claim: str, items: Sequence[tuple[str, str, str]], model: StanceModel,
    featurizer: Featurizer, embedder: Embedder | None, *, max_cites: int = 5,
) -> ClaimVerdict:
    """The head's verdict over ``items`` (from :func:`head_inputs`); the model must have
    a head, and an ``embedder`` when the head was trained with one."""
    head = model.verdict
    assert head is not None
    x = featurizer.matrix([(c, s) for _, c, s in items])
    probs = model.probabilities(x) if len(items) else np.zeros((0, 3))
    lex = x[:, : len(LEXICAL_FEATURES)]
    claim_lex = np.asarray(lexical_features(claim, ""), dtype=np.float64)
    cvec = svecs = None
    if embedder is not None:
        vecs = np.asarray(embedder.encode([claim, *(s for _, _, s in items)]), np.float64)
        cvec, svecs = vecs[0], vecs[1:]
    near = None if cvec is None else head.neighbours(cvec)
    row = claim_row(probs, lex, claim_lex, cvec, svecs, near)
    p = head.probabilities(row[None, :])[0]
    k = int(np.argmax(p))
    label = VERDICTS[k]
    why = ", ".join(head.explain(row, label)) or "no single feature"
    reasons = [f"claim-level model: p({label})={p[k]:.2f}; {why}"]
    sides = {"SUPPORTS": [0], "REFUTES": [1], "DISPUTED": [0, 1]}.get(label, [])
    cites: list[str] = []
    for c in sides:
        order = sorted(range(len(items)), key=lambda n: (-probs[n, c], n))
        if order:
            best = order[0]
            reasons.append(f"evidence: max p({LABELS[c]})={probs[best, c]:.2f} "
                           f"({items[best][0]})")
        per_side = max_cites if len(sides) == 1 else (max_cites + 1) // 2
        cites += [items[n][0] for n in order[:per_side] if items[n][0] not in cites]
    for n, (eid, _, _) in enumerate(items):
        if eid in cites:
            reasons.append(f"{eid}: p(SUPPORTS)={probs[n, 0]:.2f} p(REFUTES)={probs[n, 1]:.2f}")
    return ClaimVerdict(label, round(float(p[k]), 4), tuple(cites[:max_cites]),
                        tuple(reasons))
