"""Similar training claims: the verdict head's nearest-neighbour features.

Climate-FEVER's claims come in families (many wordings of "it's the sun", "CO2 is plant
food", "sea level is not rising"), and a family's claims tend to share a label. With a
claim embedding, the verdict head can read how the claim's nearest *training* claims were
labelled: for the ``k`` most similar claims of the head's bank (cosine of normalised
embeddings), the similarity-weighted share of each label, the best similarity among the
claims of each label, and the best similarity overall.

The bank holds the training claims' vectors and labels (never their text); a row never
counts itself (training rows leave their own claim out, as a new claim would be absent).
Ties are broken by bank order, so the features are deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["NEIGHBOUR_FEATURES", "neighbour_matrix"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_LABELS = ("sup", "ref", "nei", "dis")  # VERDICTS order
NEIGHBOUR_FEATURES: tuple[str, ...] = (
    *(f"nn_share_{c}" for c in _LABELS),
    *(f"nn_best_{c}" for c in _LABELS),
    "nn_best",
)
"""Names of the neighbour features, in row order."""


def neighbour_matrix(
    vecs: Array, bank: Array, labels: IntArray, k: int, *, self_index: IntArray | None = None,
) -> Array:
    """``(len(vecs), len(NEIGHBOUR_FEATURES))``: each row of ``vecs`` against the ``k``
    most similar rows of ``bank`` (labels: indexes into the head's classes).
    ``self_index[i]`` is the bank row that is ``vecs[i]``'s own claim (-1: none), which
    is never its neighbour."""
    n = len(vecs)
    out = np.zeros((n, len(NEIGHBOUR_FEATURES)))
    if n == 0 or len(bank) == 0 or k <= 0:
        return out
    sims = np.asarray(vecs, dtype=np.float64) @ np.asarray(bank, dtype=np.float64).T
    if self_index is not None:
        rows = np.flatnonzero(self_index >= 0)
        sims[rows, self_index[rows]] = -np.inf
    k = min(k, len(bank) - (0 if self_index is None else int(np.any(self_index >= 0))))
    if k <= 0:
        return out
    idx = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(sims, idx, axis=1)
    weight = np.maximum(top, 0.0)
    onehot = (labels[idx][:, :, None] == np.arange(len(_LABELS))).astype(np.float64)
    share = (weight[:, :, None] * onehot).sum(axis=1) / (weight.sum(axis=1, keepdims=True)
                                                          + 1e-9)
    best = np.where(onehot > 0, top[:, :, None], -1.0).max(axis=1)
    best = np.where(best < -0.5, 0.0, best)  # no neighbour with that label: 0
    out[:, :4] = share
    out[:, 4:8] = best
    out[:, 8] = top[:, 0]
    result: Array = np.round(out, 12)
    return result
