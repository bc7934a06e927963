"""Training the claim-level verdict head (:mod:`claimfsm.skills.stance.verdict_head`).

The head is stacked on the stance model: its rows aggregate the stance model's
probabilities over each claim's *retrieved* evidence, so those probabilities must come
from a stance model that never saw the claim (out-of-fold), exactly as at run time. The
caller (:func:`claimfsm.eval.train.judge.train`) provides them; this module builds the claim rows,
picks the L2 penalty and the prior-correction exponent by cross-validation over the training
claims' folds (best accuracy + macro-F1), and fits a plain (not class-balanced)
multinomial logistic regression by Nesterov-accelerated gradient descent.

With claim embeddings and ``neighbours`` > 0, each row also reads the labels of the
claim's nearest claims in a *bank* of training claims (:mod:`claimfsm.skills.stance.neighbours`):
the caller names the bank (the training claims of the fold, or every claim for the model
written); a claim in the bank never counts itself. Inside the bank the inner
cross-validation that picks the penalty and exponent sees neighbour features computed
over the whole bank (slightly optimistic for that choice only: the held-out fold's rows
read training claims alone). No randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import CLAIM_LABELS
from claimfsm.eval.metrics import classification
from claimfsm.eval.train.retrieved import Retrieved
from claimfsm.eval.train.softmax import Fit, fit_softmax
from claimfsm.skills.stance.neighbours import neighbour_matrix
from claimfsm.skills.stance.verdict_head import (
    VERDICTS,
    VerdictHead,
    claim_row,
    head_feature_names,
)

__all__ = [
    "ALPHAS",
    "L2S",
    "HeadData",
    "choose_head",
    "fit_head",
    "head_matrix",
    "labels_of",
    "predict",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

L2S: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
"""Candidate L2 penalties (per-sample mean loss: 1e-3 is about sklearn's C=1 at 1,000 claims)."""
ALPHAS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Candidate prior-correction exponents (probabilities divided by prior ** alpha)."""


@dataclass(frozen=True)
class HeadData:
    """Everything the head's rows are built from, aligned with ``retrieved``."""

    retrieved: Retrieved
    lex: Array  # (pairs, lexical features): the stance model's lexical columns
    claim_lex: Array  # (claims, lexical features): each claim against an empty sentence
    y: IntArray  # (claims,) gold claim label, index into VERDICTS
    top: int = 10
    embedder: str | None = None
    claim_vecs: Array | None = None  # (claims, dim)
    sent_vecs: Array | None = None  # (pairs, dim)
    neighbours: int = 0
    """How many nearest training claims the rows read (0: no neighbour features)."""

    @property
    def dim(self) -> int:
        """The claim embedding's width (0: none)."""
        return 0 if self.claim_vecs is None else int(self.claim_vecs.shape[1])

    @property
    def uses_neighbours(self) -> bool:
        """Whether rows carry neighbour features."""
        return self.dim > 0 and self.neighbours > 0

    def names(self) -> tuple[str, ...]:
        """The head's feature names."""
        return head_feature_names(self.dim, neighbours=self.uses_neighbours)


def _keep(r: Retrieved, top: int) -> list[IntArray]:
    """Per claim, the pair rows the head reads: rank < top, each sentence id once."""
    out: dict[int, list[int]] = {}
    seen: set[tuple[int, str]] = set()
    for i in np.flatnonzero(r.rank < top):
        g = int(r.group[i])
        key = (g, r.ids[i] if r.ids else str(i))
        if key not in seen:
            seen.add(key)
            out.setdefault(g, []).append(int(i))
    n = int(r.group.max()) + 1 if len(r.group) else 0
    return [np.asarray(out.get(g, []), dtype=np.int64) for g in range(n)]


def neighbour_rows(d: HeadData, bank: IntArray) -> Array | None:
    """Every claim's neighbour features over the bank claims ``bank`` (a claim in the
    bank leaves itself out); None when ``d`` has none."""
    if not d.uses_neighbours or d.claim_vecs is None:
        return None
    where = np.full(len(d.y), -1, dtype=np.int64)
    where[bank] = np.arange(len(bank))
    return neighbour_matrix(d.claim_vecs, d.claim_vecs[bank], d.y[bank], d.neighbours,
                            self_index=where)


def head_matrix(d: HeadData, q: Array, bank: IntArray | None = None) -> Array:
    """One row per claim from the pairs' stance probabilities ``q`` (aligned with
    ``d.retrieved``); neighbour features over the claims ``bank`` (default: all)."""
    rows = _keep(d.retrieved, d.top)
    rows += [np.zeros(0, dtype=np.int64)] * (len(d.y) - len(rows))
    near = neighbour_rows(d, np.arange(len(d.y)) if bank is None else bank)
    out = []
    for g, idx in enumerate(rows):
        cv = None if d.claim_vecs is None else d.claim_vecs[g]
        sv = None if d.sent_vecs is None else d.sent_vecs[idx]
        out.append(claim_row(q[idx], d.lex[idx], d.claim_lex[g], cv, sv,
                             None if near is None else near[g]))
    return np.vstack(out)


def _fit(x: Array, y: IntArray, l2: float, iters: int = 300, *, dim: int = 0) -> Fit:
    # Every claim weighs alike; the claim embedding's coordinates (the last ``dim``
    # columns) stay unstandardised.
    return fit_softmax(x, y, k=len(VERDICTS), l2=l2, iters=iters, balanced=False,
                       raw_from=x.shape[1] - dim)


def _prior(y: IntArray) -> Array:
    counts = np.bincount(y, minlength=len(VERDICTS)).astype(np.float64) + 1.0
    out: Array = counts / counts.sum()
    return out


def _score(y: IntArray, pred: IntArray) -> float:
    c = classification(((VERDICTS[int(a)], VERDICTS[int(b)]) for a, b in zip(y, pred,
                        strict=True)), CLAIM_LABELS)
    return c.accuracy + c.macro_f1


def choose_head(
    h: Array, y: IntArray, fold_of: IntArray, *, dim: int = 0,
) -> tuple[float, float]:
    """``(l2, alpha)`` with the best out-of-fold accuracy + macro-F1 over the
    folds in ``fold_of`` (one entry per row of ``h``). Ties: the first in grid order."""
    folds = sorted({int(f) for f in fold_of})
    best = (-1.0, L2S[0], ALPHAS[0])
    for l2 in L2S:
        p = np.zeros((len(y), len(VERDICTS)))
        prior = np.zeros((len(y), len(VERDICTS)))
        for f in folds:
            te = fold_of == f
            p[te] = _fit(h[~te], y[~te], l2, dim=dim).probabilities(h[te])
            prior[te] = _prior(y[~te])
        for alpha in ALPHAS:
            pred: IntArray = np.argmax(p / prior**alpha, axis=1).astype(np.int64)
            val = _score(y, pred)
            if val > best[0] + 1e-12:
                best = (val, l2, alpha)
    return best[1], best[2]


def fit_head(
    h: Array, y: IntArray, d: HeadData, l2: float, alpha: float,
    bank: IntArray | None = None,
) -> VerdictHead:
    """The head fitted on every row of ``h``; with neighbour features, the bank is the
    claims ``bank`` (default: all of ``d``)."""
    f = _fit(h, y, l2, dim=d.dim)
    keep = np.arange(len(d.y)) if bank is None else bank
    with_bank = d.uses_neighbours and d.claim_vecs is not None
    return VerdictHead(features=d.names(), weights=f.weights, bias=f.bias, mean=f.mean,
                       scale=f.scale, prior=_prior(y), alpha=alpha, l2=l2, top=d.top,
                       embedder=d.embedder,
                       bank=d.claim_vecs[keep] if with_bank and d.claim_vecs is not None
                       else None,
                       bank_labels=d.y[keep].astype(np.float64) if with_bank else None,
                       k=d.neighbours or 20)


def predict(head: VerdictHead, h: Array) -> list[str]:
    """The head's labels for the rows of ``h``."""
    return [VERDICTS[int(i)] for i in np.argmax(head.probabilities(h), axis=1)]


def labels_of(gold: Sequence[str]) -> IntArray:
    """Gold claim labels as indexes into :data:`VERDICTS`."""
    return np.asarray([VERDICTS.index(g) for g in gold], dtype=np.int64)
