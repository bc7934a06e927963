"""``claimfsm train``: fit the learned stance model and measure it honestly.

The training data is every (claim, annotated evidence sentence, evidence label) triple of
a dataset in the Climate-FEVER format. The model (:class:`claimfsm.skills.stance.model.StanceModel`)
is a multinomial logistic regression over standardised features, fitted by accelerated
gradient descent on a class-balanced cross-entropy with an L2 penalty: no randomness
except the fixed-seed assignment of claims to folds, so the same data gives the same
file.

With a corpus (:mod:`claimfsm.eval.train.retrieved`) the thresholds, and how many ranked sentences
per subclaim to judge, are chosen on the verdicts over the engine's own retrieved
evidence instead of the annotated sentences.

Figures are cross-validated *by claim*: the claims are split into K folds; for each fold
a model is fitted on the other K-1, its verdict thresholds are chosen by an inner
cross-validation on those K-1 folds only, and it is scored on the held-out fold. No
figure comes from a claim the model (or its thresholds) saw. The file written is then
fitted on every claim, with thresholds chosen on the out-of-fold predictions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import CLAIM_LABELS, EVIDENCE_LABELS, Dataset
from claimfsm.eval.groups import grouped_folds
from claimfsm.eval.metrics import classification
from claimfsm.eval.train.checks import finite, learnable
from claimfsm.eval.train.head import HeadSpec, head_data, head_fold
from claimfsm.eval.train.report import NothingToLearn, TrainReport
from claimfsm.eval.train.rerank import train_reranker
from claimfsm.eval.train.retrieved import Retrieved
from claimfsm.eval.train.softmax import Fit, fit_softmax
from claimfsm.eval.train.thresholds import (
    GRID_REFUTE,
    GRID_SUPPORT,
    choose,
    choose_thresholds,
    claim_verdicts,
    sentence_labels,
    verdicts,
)
from claimfsm.eval.train.verdict import choose_head, fit_head, head_matrix
from claimfsm.skills.stance.lexical import LABELS
from claimfsm.skills.stance.model import Featurizer, StanceModel
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES

# The thresholds' public names (GRID_*, choose_thresholds, claim_verdicts) were defined
# here before they had a module of their own, and are still importable from here.
__all__ = [
    "GRID_REFUTE",
    "GRID_SUPPORT",
    "Fit",
    "NothingToLearn",
    "Pairs",
    "TrainReport",
    "check_learnable",
    "choose_thresholds",
    "claim_verdicts",
    "collect_pairs",
    "fit",
    "train",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Pairs:
    """Training pairs; ``group[i]`` is the index of pair i's claim."""

    claims: tuple[str, ...]
    sentences: tuple[str, ...]
    y: IntArray
    group: IntArray
    claim_labels: tuple[str, ...]


def collect_pairs(data: Dataset) -> Pairs:
    """Every (claim, annotated sentence) pair with its evidence label."""
    texts = {c.id: c.claim for c in data.claims}
    cl, se, ys, gs = [], [], [], []
    for n, g in enumerate(data.gold):
        for e in g.evidences:
            cl.append(texts[g.id])
            se.append(e.text)
            ys.append(LABELS.index(e.label))
            gs.append(n)
    return Pairs(tuple(cl), tuple(se), np.asarray(ys, dtype=np.int64),
                 np.asarray(gs, dtype=np.int64), tuple(g.label for g in data.gold))


def fit(x: Array, y: IntArray, *, l2: float = 1e-3, iters: int = 400) -> Fit:
    """The stance model: class-balanced softmax regression over the three stance labels."""
    return fit_softmax(x, y, k=len(LABELS), l2=l2, iters=iters, balanced=True)


def check_learnable(data: Dataset, folds: int = 5, seed: int = 13) -> None:
    """:class:`NothingToLearn` for a dataset :func:`train` would refuse (see
    :func:`~claimfsm.eval.train.checks.learnable`), without fitting anything: for a
    caller with costly work to do before training (retrieving the training evidence)."""
    pairs = collect_pairs(data)
    learnable(pairs.y, _folds(data, folds, seed)[pairs.group], folds)


def _folds(data: Dataset, k: int, seed: int) -> IntArray:
    # Grouped: near-duplicate claims and claims sharing evidence sentences share a fold,
    # so no held-out claim is scored by a model that saw its twin (claimfsm.eval.groups).
    # Groups of one size are dealt in the order of the fixed-seed permutation the plain
    # K-fold split used, so claims with no link keep their folds.
    order = np.random.default_rng(seed).permutation(len(data.claims)).tolist()
    return np.asarray(grouped_folds(data, k, order), dtype=np.int64)


def _oof(
    x: Array, pairs: Pairs, fold_of: IntArray, folds: Sequence[int],
    fitter: Callable[[Array, IntArray], Fit], extra: tuple[Array, IntArray] | None,
) -> tuple[Array, Array | None]:
    """Out-of-fold probabilities for the pairs whose claim is in ``folds`` (and for the
    ``extra`` rows, given with their claim indexes)."""
    p = np.zeros((len(pairs.y), len(LABELS)))
    q = None if extra is None else np.zeros((len(extra[0]), len(LABELS)))
    pf = fold_of[pairs.group]
    for f in folds:
        tr = np.isin(pf, [g for g in folds if g != f])
        model = fitter(x[tr], pairs.y[tr])
        p[pf == f] = model.probabilities(x[pf == f])
        if extra is not None and q is not None:
            te = fold_of[extra[1]] == f
            q[te] = model.probabilities(extra[0][te])
    return p, q


def _alignment_weights(model: StanceModel) -> dict[str, list[float]]:
    # The written model's weight of each alignment feature per stance class (standardised
    # features, so the sizes compare): what the learned judge made of the checks.
    idx = {name: i for i, name in enumerate(model.features)}
    return {name: [round(float(w), 3) for w in model.weights[:, idx[name]]]
            for name in LEXICAL_FEATURES if name.startswith("align_") and name in idx}


def train(
    data: Dataset, out: str | Path, *, folds: int = 5, featurizer: Featurizer | None = None,
    embedder: str | None = None, seed: int = 13, l2: float = 1e-3, iters: int = 400,
    retrieved: Retrieved | None = None, on_fold: Callable[[int, int], None] | None = None,
    head: HeadSpec | None = None,
) -> TrainReport:
    """Cross-validate (nested, by claim), then fit on everything and write ``out``; with
    ``retrieved`` and ``head``, the claim-level verdict head too (stacked on out-of-fold
    stance probabilities, see :mod:`claimfsm.eval.train.verdict`)."""
    feat = featurizer or Featurizer()
    pairs = collect_pairs(data)
    n = len(pairs.claim_labels)
    fold_of = _folds(data, folds, seed)
    pf = fold_of[pairs.group]
    learnable(pairs.y, pf, folds)
    x = feat.matrix(list(zip(pairs.claims, pairs.sentences, strict=True)))
    extra = None if retrieved is None else (feat.matrix(list(retrieved.pairs)), retrieved.group)
    rf = None if retrieved is None else fold_of[retrieved.group]

    def fitter(a: Array, b: IntArray) -> Fit:
        return fit(a, b, l2=l2, iters=iters)

    hd = (None if head is None or retrieved is None or extra is None
          else head_data(data, retrieved, extra[0], pairs.claim_labels, head))
    reranked = None
    if hd is not None and hd.uses_neighbours and retrieved is not None and extra is not None \
            and len(retrieved.value) == len(retrieved.pairs):
        # The evidence reranker first: everything after reads the lists in its order.
        reranked = train_reranker(data, retrieved, hd, fold_of)
        o, retrieved = reranked.order, reranked.retrieved
        extra = (extra[0][o], retrieved.group)
        assert hd.sent_vecs is not None
        hd = replace(hd, retrieved=retrieved, lex=hd.lex[o], sent_vecs=hd.sent_vecs[o])
        rf = fold_of[retrieved.group]
    v_head: dict[int, str] = {}
    head_params: list[tuple[float, float]] = []

    stance_pred: list[str] = [""] * len(pairs.y)
    v_gold: dict[int, str] = {}
    v_retr: dict[int, str] = {}
    chosen: list[tuple[float, float]] = []
    for f in range(folds):
        rest = [g for g in range(folds) if g != f]
        p_in, q_in = _oof(x, pairs, fold_of, rest, fitter, extra)
        train_claims = np.flatnonzero(fold_of != f)
        c = choose(p_in, q_in, pairs.group, pairs.claim_labels, retrieved, train_claims,
                   pf != f, None if rf is None else rf != f)
        chosen.append((c.st, c.rt))
        te = pf == f
        model = fitter(x[~te], pairs.y[~te])
        p_te = model.probabilities(x[te])
        for i, lab in zip(np.flatnonzero(te), sentence_labels(p_te, c.st, c.rt), strict=True):
            stance_pred[int(i)] = lab
        held = np.flatnonzero(fold_of == f)
        v_gold.update(verdicts(p_te, pairs.group[te], held, c))
        if extra is not None and retrieved is not None and rf is not None:
            m = (rf == f) & (retrieved.rank < c.top)
            v_retr.update(verdicts(model.probabilities(extra[0][m]), retrieved.group[m],
                                   held, c))
        if hd is not None and q_in is not None and rf is not None and extra is not None:
            q = q_in.copy()
            q[rf == f] = model.probabilities(extra[0][rf == f])
            preds, params = head_fold(hd, q, fold_of, f)
            v_head.update(preds)
            head_params.append(params)
        if on_fold is not None:
            on_fold(f + 1, folds)
    gold_stance = [LABELS[int(c)] for c in pairs.y]
    cv_stance = classification(zip(gold_stance, stance_pred, strict=True), EVIDENCE_LABELS)
    cv_verdict = classification(((pairs.claim_labels[g], v_gold[g]) for g in range(n)),
                                CLAIM_LABELS)
    cv_retr = (classification(((pairs.claim_labels[g], v_retr[g]) for g in range(n)),
                              CLAIM_LABELS) if retrieved is not None else None)
    p_all, q_all = _oof(x, pairs, fold_of, list(range(folds)), fitter, extra)
    final_choice = choose(p_all, q_all, pairs.group, pairs.claim_labels, retrieved,
                          np.arange(n), np.ones(len(pairs.y), dtype=bool),
                          None if retrieved is None else np.ones(len(retrieved.rank), bool))
    final = fitter(x, pairs.y)
    cv_head = (classification(((pairs.claim_labels[g], v_head[g]) for g in range(n)),
                              CLAIM_LABELS) if hd is not None else None)
    vhead = None
    if hd is not None and q_all is not None:
        h_all = head_matrix(hd, q_all)
        hl2, alpha = choose_head(h_all, hd.y, fold_of, dim=hd.dim)
        vhead = fit_head(h_all, hd.y, hd, hl2, alpha)
    figures = {"cv_stance": cv_stance, "cv_verdict": cv_verdict, "cv_verdict_retrieved": cv_retr,
               "cv_verdict_head": cv_head}
    if reranked is not None:
        meta_rr = {"cv_recall@5_before": reranked.before.recall_at_5,
                   "cv_recall@5": reranked.after.recall_at_5,
                   "cv_hit@5": reranked.after.hit_at_5}
    meta: dict[str, Any] = {
        **(meta_rr if reranked is not None else {}),
        "claims": n, "pairs": len(pairs.y), "folds": folds, "seed": seed, "l2": l2,
        "iters": iters, **{k: {"accuracy": v.accuracy, "macro_f1": v.macro_f1}
                           for k, v in figures.items() if v is not None},
    }
    dim = (x.shape[1] - len(feat.names())) // 2
    written = StanceModel(features=feat.names(dim), weights=final.weights, bias=final.bias,
                        mean=final.mean, scale=final.scale, support_t=final_choice.st,
                        refute_t=final_choice.rt, embedder=embedder, top=final_choice.top,
                        meta=meta, verdict=vhead,
                        reranker=None if reranked is None else reranked.reranker)
    finite(written)
    written.save(out)
    return TrainReport(claims=n, pairs=len(pairs.y), folds=folds, features=x.shape[1],
                       embedder=embedder, cv_stance=cv_stance, cv_verdict=cv_verdict,
                       cv_verdict_retrieved=cv_retr, fold_thresholds=chosen,
                       cv_verdict_head=cv_head, head_params=head_params,
                       head=None if vhead is None else (vhead.l2, vhead.alpha),
                       head_embedder=None if vhead is None else vhead.embedder,
                       support_t=final_choice.st, refute_t=final_choice.rt,
                       top=final_choice.top, out=str(out),
                       alignment=_alignment_weights(written),
                       cv_rerank=None if reranked is None else (reranked.before, reranked.after))
