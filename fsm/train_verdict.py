"""Training the claim-level verdict head (:mod:`skills.stance_model_verdict`).

The head is stacked on the stance model: its rows aggregate the stance model's
probabilities over each claim's *retrieved* evidence, so those probabilities must come
from a stance model that never saw the claim (out-of-fold), exactly as at run time. The
caller (:func:`fsm.train.train`) provides them; this module builds the claim rows, picks
the L2 penalty and the prior-correction exponent by cross-validation over the training
claims' folds (best accuracy + macro-F1), and fits a plain (not class-balanced)
multinomial logistic regression by Nesterov-accelerated gradient descent. No randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fsm.eval_data import CLAIM_LABELS
from fsm.eval_metrics import classification
from fsm.train_retrieved import Retrieved
from skills.stance_model_verdict import (
    SIMS,
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

    def names(self) -> tuple[str, ...]:
        """The head's feature names."""
        return head_feature_names(0 if self.claim_vecs is None else self.claim_vecs.shape[1])


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


def head_matrix(d: HeadData, q: Array) -> Array:
    """One row per claim from the pairs' stance probabilities ``q`` (aligned with
    ``d.retrieved``)."""
    rows = _keep(d.retrieved, d.top)
    rows += [np.zeros(0, dtype=np.int64)] * (len(d.y) - len(rows))
    out = []
    for g, idx in enumerate(rows):
        cv = None if d.claim_vecs is None else d.claim_vecs[g]
        sv = None if d.sent_vecs is None else d.sent_vecs[idx]
        out.append(claim_row(q[idx], d.lex[idx], d.claim_lex[g], cv, sv))
    return np.vstack(out)


@dataclass(frozen=True)
class _Fit:
    weights: Array
    bias: Array
    mean: Array
    scale: Array


def _raw(f: _Fit, x: Array) -> Array:
    z = ((x - f.mean) / f.scale) @ f.weights.T + f.bias
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Array = e / e.sum(axis=1, keepdims=True)
    return out


def _fit(x: Array, y: IntArray, l2: float, iters: int = 300) -> _Fit:
    k = len(VERDICTS)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    # The claim embedding's coordinates stay as they are (unit-norm rows, tiny each):
    # standardising 384 of them would let the penalty see them as 384 strong features.
    n_ev = len(head_feature_names()) + SIMS + 1
    if x.shape[1] > n_ev:
        mean[n_ev:], scale[n_ev:] = 0.0, 1.0
    xs = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    onehot = np.eye(k)[y]
    vec = np.ones(xs.shape[1]) / np.sqrt(xs.shape[1])
    for _ in range(30):  # largest eigenvalue of X^T X / n bounds the curvature
        vec = xs.T @ (xs @ vec) / len(xs)
        vec /= np.linalg.norm(vec) or 1.0
    step = 1.0 / max(0.5 * float(vec @ (xs.T @ (xs @ vec))) / len(xs) + l2, 1e-9)
    theta = np.zeros((xs.shape[1], k))
    prev, look = theta, theta
    for t in range(1, iters + 1):
        z = xs @ look
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        grad = xs.T @ (p - onehot) / len(xs)
        grad[:-1] += l2 * look[:-1]
        theta = look - step * grad
        look = theta + (t - 1) / (t + 2) * (theta - prev)
        prev = theta
    return _Fit(theta[:-1].T.copy(), theta[-1].copy(), mean, scale)


def _prior(y: IntArray) -> Array:
    counts = np.bincount(y, minlength=len(VERDICTS)).astype(np.float64) + 1.0
    out: Array = counts / counts.sum()
    return out


def _score(y: IntArray, pred: IntArray) -> float:
    c = classification(((VERDICTS[int(a)], VERDICTS[int(b)]) for a, b in zip(y, pred,
                        strict=True)), CLAIM_LABELS)
    return c.accuracy + c.macro_f1


def choose_head(h: Array, y: IntArray, fold_of: IntArray) -> tuple[float, float]:
    """``(l2, alpha)`` with the best out-of-fold accuracy + macro-F1 over the folds in
    ``fold_of`` (one entry per row of ``h``). Ties: the first in grid order."""
    folds = sorted({int(f) for f in fold_of})
    best = (-1.0, L2S[0], ALPHAS[0])
    for l2 in L2S:
        p = np.zeros((len(y), len(VERDICTS)))
        prior = np.zeros((len(y), len(VERDICTS)))
        for f in folds:
            te = fold_of == f
            p[te] = _raw(_fit(h[~te], y[~te], l2), h[te])
            prior[te] = _prior(y[~te])
        for alpha in ALPHAS:
            pred: IntArray = np.argmax(p / prior**alpha, axis=1).astype(np.int64)
            val = _score(y, pred)
            if val > best[0] + 1e-12:
                best = (val, l2, alpha)
    return best[1], best[2]


def fit_head(h: Array, y: IntArray, d: HeadData, l2: float, alpha: float) -> VerdictHead:
    """The head fitted on every row of ``h``."""
    f = _fit(h, y, l2)
    return VerdictHead(features=d.names(), weights=f.weights, bias=f.bias, mean=f.mean,
                       scale=f.scale, prior=_prior(y), alpha=alpha, l2=l2, top=d.top,
                       embedder=d.embedder)


def predict(head: VerdictHead, h: Array) -> list[str]:
    """The head's labels for the rows of ``h``."""
    return [VERDICTS[int(i)] for i in np.argmax(head.probabilities(h), axis=1)]


def labels_of(gold: Sequence[str]) -> IntArray:
    """Gold claim labels as indexes into :data:`VERDICTS`."""
    return np.asarray([VERDICTS.index(g) for g in gold], dtype=np.int64)
