"""The claim-level verdict head of a learned stance model (optional part of the file).

Per-sentence stances say little about the claim on their own: Climate-FEVER labels a claim
from its annotators' overall reading, and a claim's own wording ("hoax", "natural cycle")
and how close the best evidence is carry much of the signal. The head is a 4-class
multinomial logistic regression over one row per claim:

- aggregates of the stance model's probabilities over the claim's judged evidence (max,
  mean and top-3 mean of ``p(SUPPORTS)``, ``p(REFUTES)``, ``p(NOT_ENOUGH_INFO)``, counts
  past 0.3 and 0.5, both-sides strength) and of the lexical signals (relevance, clashes,
  negation flips, the lexical judge's own labels), plus claim-only lexical features;
- with an embedder (``embedder``): the claim's top-:data:`SIMS` cosine similarities to the
  judged sentences and the claim embedding itself;
- with a bank of training claims (``bank``, ``bank_labels``, ``k``): how the claim's
  nearest training claims were labelled (:mod:`claimfsm.skills.stance.neighbours`).

Its probabilities are divided by ``prior ** alpha`` (the training label distribution) and
renormalised, which trades a little accuracy for recall on the rare classes; ``alpha``
and the L2 penalty are chosen by cross-validation at training time
(:mod:`claimfsm.eval.train.verdict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from claimfsm.skills.stance.model_features import LEXICAL_FEATURES
from claimfsm.skills.stance.neighbours import NEIGHBOUR_FEATURES, neighbour_matrix

__all__ = [
    "EVIDENCE_FEATURES",
    "SIMS",
    "VERDICTS",
    "VerdictHead",
    "claim_row",
    "head_feature_names",
]

Array = npt.NDArray[np.float64]

VERDICTS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
"""The head's classes, in weight-row order."""
SIMS = 10
"""How many of the claim's best cosine similarities to its evidence are features."""

_LEX = {name: i for i, name in enumerate(LEXICAL_FEATURES)}
# Claim-only lexical features: the same in every row of a claim, so taken from the first.
_CLAIM_ONLY = ("claim_terms", "claim_has_number", "claim_negation", "claim_hedge",
               "claim_contrarian", "claim_causal", "claim_length", "claim_denies_any")
# Pair features worth their maximum over the evidence, and their mean over the top three.
_PAIR_MAX = ("relevance", "predicate_coverage", "jaccard", "rel_x_clash",
             "rel_x_negation_flip", "lexical_supports", "lexical_refutes",
             "sentence_correction", "numbers_clash", "direction_clash", "antonym_clash",
             "align_blocks", "align_refutes")

EVIDENCE_FEATURES: tuple[str, ...] = (
    "n_sentences",
    *(f"{stat}_p_{c}" for c in ("sup", "ref", "nei") for stat in ("max", "mean", "top3")),
    "count_sup_30", "count_sup_50", "count_ref_30", "count_ref_50", "both_sides",
    "sup_minus_ref",
    *(f"max_{name}" for name in _PAIR_MAX),
    "count_lexical_supports", "count_lexical_refutes",
    *_CLAIM_ONLY,
)
"""Names of the head's evidence and lexical features (before any dense ones)."""


def head_feature_names(dim: int = 0, *, neighbours: bool = False) -> tuple[str, ...]:
    """The head's feature names with an embedding of ``dim`` (0: none) and, with an
    embedding, the neighbour features when ``neighbours``."""
    if not dim:
        return EVIDENCE_FEATURES
    return (*EVIDENCE_FEATURES, *(f"sim{i}" for i in range(SIMS)), "sim_mean",
            *(NEIGHBOUR_FEATURES if neighbours else ()), *(f"claim{i}" for i in range(dim)))


def _top_mean(v: Array, k: int = 3) -> float:
    return float(np.sort(v)[::-1][:k].mean()) if len(v) else 0.0


def claim_row(
    probs: Array, lex: Array, claim_lex: Array | None = None,
    claim_vec: Array | None = None, sent_vecs: Array | None = None,
    neighbours: Array | None = None,
) -> Array:
    """One claim's feature row: ``probs`` ``(n, 3)`` stance probabilities and ``lex``
    ``(n, len(LEXICAL_FEATURES))`` lexical rows of its judged sentences; ``claim_lex``, a
    lexical row of the claim alone (used when there is no evidence); with ``claim_vec``
    (``(dim,)``) and ``sent_vecs`` (``(n, dim)``), the dense part, and ``neighbours``
    (the claim's row of :func:`~claimfsm.skills.stance.neighbours.neighbour_matrix`) before the
    claim vector."""
    n = len(probs)
    row: list[float] = [math.log1p(n)]
    for c in range(3):
        col = probs[:, c] if n else np.zeros(0)
        row += [float(col.max()) if n else 0.0, float(col.mean()) if n else 0.0,
                _top_mean(col)]
    ps = probs[:, 0] if n else np.zeros(0)
    pr = probs[:, 1] if n else np.zeros(0)
    max_s = float(ps.max()) if n else 0.0
    max_r = float(pr.max()) if n else 0.0
    row += [math.log1p(int((ps >= 0.3).sum())), math.log1p(int((ps >= 0.5).sum())),
            math.log1p(int((pr >= 0.3).sum())), math.log1p(int((pr >= 0.5).sum())),
            min(max_s, max_r), max_s - max_r]
    row += [float(lex[:, _LEX[name]].max()) if n else 0.0 for name in _PAIR_MAX]
    row += [math.log1p(int((lex[:, _LEX["lexical_supports"]] > 0).sum())) if n else 0.0,
            math.log1p(int((lex[:, _LEX["lexical_refutes"]] > 0).sum())) if n else 0.0]
    source = lex[0] if n else claim_lex
    row += [float(source[_LEX[name]]) if source is not None else 0.0 for name in _CLAIM_ONLY]
    out = np.asarray(row, dtype=np.float64)
    if claim_vec is None:
        return out
    sims = np.zeros(SIMS)
    if sent_vecs is not None and len(sent_vecs):
        best = np.sort(np.asarray(sent_vecs, dtype=np.float64) @ claim_vec)[::-1][:SIMS]
        sims[: len(best)] = best
    mean = float(sims[sims != 0].mean()) if np.any(sims != 0) else 0.0
    near = np.zeros(0) if neighbours is None else np.asarray(neighbours, dtype=np.float64)
    return np.concatenate([out, sims, [mean], near, np.asarray(claim_vec, dtype=np.float64)])


@dataclass(frozen=True)
class VerdictHead:
    """Weights over standardised claim rows, the prior correction, and its embedder."""

    features: tuple[str, ...]
    weights: Array  # (4, features), rows in VERDICTS order
    bias: Array  # (4,)
    mean: Array
    scale: Array
    prior: Array  # (4,) training label shares
    alpha: float = 0.5
    l2: float = 1e-3
    top: int = 10
    """How many ranked sentences per subclaim the head reads."""
    embedder: str | None = None
    bank: Array | None = None
    """(m, dim) training claims' embeddings for the neighbour features (None: none)."""
    bank_labels: Array | None = None
    """(m,) their labels, indexes into :data:`VERDICTS`."""
    k: int = 20
    """How many neighbours the features read."""

    def neighbours(self, claim_vec: Array) -> Array | None:
        """The claim's neighbour features, or None when the head has no bank."""
        if self.bank is None or self.bank_labels is None:
            return None
        labels = np.asarray(self.bank_labels, dtype=np.int64)
        row: Array = neighbour_matrix(np.asarray(claim_vec, dtype=np.float64)[None, :],
                                      self.bank, labels, self.k)[0]
        return row

    def probabilities(self, x: Array) -> Array:
        """``(n, 4)`` prior-corrected probabilities in :data:`VERDICTS` order."""
        z = ((x - self.mean) / self.scale) @ self.weights.T + self.bias
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p = p / np.maximum(self.prior, 1e-6) ** self.alpha
        out: Array = p / p.sum(axis=1, keepdims=True)
        return out

    def explain(self, x: Array, label: str, k: int = 3) -> list[str]:
        """The ``k`` features that pushed ``label`` most (dense parts summed by kind)."""
        c = VERDICTS.index(label)
        push = (self.weights[c] - self.weights.mean(axis=0)) * ((x - self.mean) / self.scale)
        named: dict[str, float] = {}
        for name, val in zip(self.features, push, strict=True):
            group = ("claim wording" if name.startswith("claim") and name[5:].isdigit()
                     else "evidence similarity" if name.startswith("sim")
                     else "similar training claims" if name.startswith("nn_") else name)
            named[group] = named.get(group, 0.0) + float(val)
        ranked = sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [f"{n} {v:+.2f}" for n, v in ranked if v > 0]
