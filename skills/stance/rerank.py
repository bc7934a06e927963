"""The learned evidence reranker of a stance model file (optional part of the file).

EXTRACT ranks each subclaim's sentences by key-term coverage and the pool ranking
(BM25 fused with MiniLM cosine). With a learned profile whose model carries a reranker,
EXTRACT re-orders that list by a logistic regression over, per sentence:

- where the engine placed it (position, its log and inverse, the fused rank value), its
  key-term coverage and how many subclaims the claim has;
- the sentence's **annotation history** in the training data: how many training claims
  had it among their annotated evidence, how many of those labelled it decisive
  (SUPPORTS or REFUTES), a smoothed decisive share, and the claim's best cosine
  similarity to a training claim for which it was decisive, and to one for which it was
  not (the training claims' vectors are the verdict head's bank: see
  :mod:`claimfsm.skills.stance.neighbours`);
- the claim's cosine similarity to the sentence (MiniLM), and the stance model's lexical
  features of the (subclaim, sentence) pair
  (:data:`~claimfsm.skills.stance.model_features.LEXICAL_FEATURES`:
  coverage, names, numbers, negation...; VERIFY reads the same rows from the same cache).

A sentence with no history gets the "never annotated" values, so the reranker still
runs on a corpus of one's own, where only the first and last groups say anything.
The item's ``rank`` becomes the reranker's probability (rounded to 1e-6), so the
evidence list and every later step read the new order. Deterministic: a fixed model,
ties kept in the engine's order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from claimfsm.skills.stance.model_features import LEXICAL_FEATURES

__all__ = [
    "RERANK_FEATURES",
    "History",
    "Reranker",
    "history_rows",
    "read_reranker",
    "rerank_row",
    "reranker_arrays",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

RERANK_FEATURES: tuple[str, ...] = (
    "position", "log_position", "inverse_position", "rank", "coverage", "subclaims",
    "history_share", "history_annotated", "history_decisive", "history_sim_decisive",
    "history_sim_other", "cosine", *(f"lex_{name}" for name in LEXICAL_FEATURES),
)
"""The reranker's features, in row order."""

History = Mapping[str, Sequence[tuple[int, bool]]]
"""Sentence (document) id -> ``(bank row of a training claim, decisive for it)``."""


def history_rows(
    doc_ids: Sequence[str], claim_vec: Array | None, history: History, bank: Array | None,
    *, exclude: int = -1,
) -> Array:
    """``(len(doc_ids), 5)``: the history features of each sentence for a claim with
    embedding ``claim_vec``; bank row ``exclude`` (the claim itself, in training) is
    never counted."""
    out = np.zeros((len(doc_ids), 5))
    sims = (np.asarray(bank, dtype=np.float64) @ claim_vec
            if bank is not None and claim_vec is not None and len(bank) else None)
    for i, doc in enumerate(doc_ids):
        seen = [(b, dec) for b, dec in history.get(doc, ()) if b != exclude]
        k = sum(1 for _, dec in seen if dec)
        best_dec = max((float(sims[b]) for b, dec in seen if dec), default=0.0) \
            if sims is not None else 0.0
        best_other = max((float(sims[b]) for b, dec in seen if not dec), default=0.0) \
            if sims is not None else 0.0
        out[i] = [(k + 0.3) / (len(seen) + 1), math.log1p(len(seen)), math.log1p(k),
                  best_dec, best_other]
    return out


def rerank_row(position: int, rank: float, coverage: float, subclaims: int,
               history: Array, cosine: float, lexical: Sequence[float]) -> list[float]:
    """One sentence's feature row (:data:`RERANK_FEATURES` order); ``lexical`` is the
    pair's row of :data:`~claimfsm.skills.stance.model_features.LEXICAL_FEATURES`."""
    return [float(position), math.log1p(position), 1.0 / (1 + position), float(rank),
            float(coverage), float(subclaims), *(float(v) for v in history), float(cosine),
            *(float(v) for v in lexical)]


@dataclass(frozen=True)
class Reranker:
    """Logistic-regression weights over standardised rows, and the training history."""

    weights: Array  # (features,)
    bias: float
    mean: Array
    scale: Array
    history_ids: tuple[str, ...]
    history_bank: IntArray  # bank row of each history entry
    history_decisive: IntArray  # 1: SUPPORTS or REFUTES for that claim

    def history(self) -> History:
        """The history as a mapping (for :func:`history_rows`), built once per model:
        EXTRACT asks for it on every learned claim, and it has a row per training pair."""
        built: History | None = self.__dict__.get("_history")
        if built is None:
            out: dict[str, list[tuple[int, bool]]] = {}
            for doc, b, dec in zip(self.history_ids, self.history_bank.tolist(),
                                   self.history_decisive.tolist(), strict=True):
                out.setdefault(doc, []).append((int(b), bool(dec)))
            built = MappingProxyType({d: tuple(v) for d, v in out.items()})
            object.__setattr__(self, "_history", built)  # frozen: a cache, not state
        return built

    def probabilities(self, x: Array) -> Array:
        """p(decisive) for each row of ``x``."""
        z = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.weights
        out: Array = 1.0 / (1.0 + np.exp(-(z + self.bias)))
        return out


def reranker_arrays(r: Reranker) -> dict[str, npt.NDArray[np.generic]]:
    """The reranker as ``r_*`` arrays of the model file."""
    return {"r_weights": r.weights, "r_bias": np.asarray([r.bias]), "r_mean": r.mean,
            "r_scale": r.scale, "r_history_ids": np.asarray(r.history_ids, dtype=np.str_),
            "r_history_bank": r.history_bank, "r_history_decisive": r.history_decisive}


def read_reranker(
    z: Mapping[str, npt.NDArray[np.generic]], files: Sequence[str],
) -> Reranker | None:
    """The reranker stored in an open model file, None if it has none; ValueError if
    its arrays do not fit together."""
    if "r_weights" not in files:
        return None
    w = np.asarray(z["r_weights"], dtype=np.float64)
    ids = tuple(str(s) for s in np.asarray(z["r_history_ids"]).tolist())
    bank = np.asarray(z["r_history_bank"], dtype=np.int64)
    dec = np.asarray(z["r_history_decisive"], dtype=np.int64)
    mean = np.asarray(z["r_mean"], dtype=np.float64)
    scale = np.asarray(z["r_scale"], dtype=np.float64)
    if (w.shape != (len(RERANK_FEATURES),) or mean.shape != w.shape or scale.shape != w.shape
            or not len(ids) == len(bank) == len(dec)):
        raise ValueError("reranker arrays do not match")
    return Reranker(weights=w, bias=float(np.asarray(z["r_bias"]).reshape(-1)[0]), mean=mean,
                    scale=scale, history_ids=ids, history_bank=bank, history_decisive=dec)
