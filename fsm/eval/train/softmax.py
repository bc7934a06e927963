"""One softmax-regression solver for the learned judge's stance model and verdict head.

Multinomial logistic regression with L2, by Nesterov-accelerated gradient descent; the
step is 1/L from a power-iteration bound on the curvature. Deterministic: no randomness,
fixed iteration count. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Fit", "fit_softmax"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Fit:
    """Fitted weights over standardised features."""

    weights: Array
    bias: Array
    mean: Array
    scale: Array

    def probabilities(self, x: Array) -> Array:
        """``(n, k)`` class probabilities."""
        z = ((x - self.mean) / self.scale) @ self.weights.T + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        out: Array = e / e.sum(axis=1, keepdims=True)
        return out


def fit_softmax(
    x: Array, y: IntArray, *, k: int, l2: float, iters: int, balanced: bool,
    raw_from: int | None = None,
) -> Fit:
    """Fit ``k`` classes. ``balanced`` weighs each class by the inverse of its count
    (else every row alike); columns from ``raw_from`` on are left unstandardised (for
    embedding coordinates: standardising hundreds of tiny ones would make the penalty
    treat them as that many strong features)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    if raw_from is not None and x.shape[1] > raw_from:
        mean[raw_from:], scale[raw_from:] = 0.0, 1.0
    xs = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    if balanced:
        counts = np.bincount(y, minlength=k).astype(np.float64)
        w_cls = np.where(counts > 0, len(y) / (k * np.maximum(counts, 1.0)), 0.0)
        w = w_cls[y] / w_cls[y].sum()
    else:
        w = np.full(len(y), 1.0 / len(y))
    onehot = np.eye(k)[y]
    vec = np.ones(xs.shape[1]) / np.sqrt(xs.shape[1])
    for _ in range(30):  # largest eigenvalue of X^T diag(w) X
        vec = xs.T @ (w * (xs @ vec))
        vec /= np.linalg.norm(vec) or 1.0
    lip = 0.5 * float(vec @ (xs.T @ (w * (xs @ vec)))) + l2
    step = 1.0 / max(lip, 1e-9)
    theta = np.zeros((xs.shape[1], k))
    prev, look = theta, theta
    for t in range(1, iters + 1):
        z = xs @ look
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        grad = xs.T @ (w[:, None] * (p - onehot))
        grad[:-1] += l2 * look[:-1]
        theta = look - step * grad
        look = theta + (t - 1) / (t + 2) * (theta - prev)
        prev = theta
    return Fit(weights=theta[:-1].T.copy(), bias=theta[-1].copy(), mean=mean, scale=scale)
