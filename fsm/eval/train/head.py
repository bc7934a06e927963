"""Glue between :func:`claimfsm.eval.train.judge.train` and the verdict head's trainer.

:class:`HeadSpec` says how the head is built (how many ranked sentences per subclaim it
reads, and the embedder for its dense part, if any); :func:`head_data` gathers its
inputs once; :func:`head_fold` scores one outer fold: hyperparameters chosen by an inner
cross-validation over the training claims only, head fitted on them, held-out claims
labelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import Dataset
from claimfsm.eval.train.retrieved import Retrieved
from claimfsm.eval.train.verdict import (
    HeadData,
    choose_head,
    fit_head,
    head_matrix,
    labels_of,
    predict,
)
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES, lexical_features

if TYPE_CHECKING:
    from claimfsm.skills.stance.model import Embedder

__all__ = ["HeadSpec", "head_data", "head_fold"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class HeadSpec:
    """How to build the verdict head: ``top`` ranked sentences per subclaim, an
    optional embedder (its ``name`` is written into the model file) and, with one, how
    many nearest training claims the neighbour features read (0: none)."""

    top: int = 20
    embedder: Embedder | None = None
    embedder_name: str | None = None
    neighbours: int = 20


def head_data(
    data: Dataset, retrieved: Retrieved, x_retrieved: Array, gold: tuple[str, ...],
    spec: HeadSpec,
) -> HeadData:
    """The head's inputs: lexical columns of the retrieved pairs, claim-only lexical rows,
    gold labels, and with an embedder the claim and sentence vectors."""
    nlex = len(LEXICAL_FEATURES)
    claims = [c.claim for c in data.claims]
    claim_lex = np.asarray([lexical_features(c, "") for c in claims], dtype=np.float64)
    cvecs = svecs = None
    if spec.embedder is not None:
        cvecs = np.asarray(spec.embedder.encode(claims), dtype=np.float64)
        texts = list(dict.fromkeys(s for _, s in retrieved.pairs))
        at = {t: i for i, t in enumerate(texts)}
        vecs = np.asarray(spec.embedder.encode(texts), dtype=np.float64)
        svecs = vecs[[at[s] for _, s in retrieved.pairs]] if texts else np.zeros((0, 1))
    return HeadData(retrieved=retrieved, lex=x_retrieved[:, :nlex], claim_lex=claim_lex,
                    y=labels_of(gold), top=spec.top, embedder=spec.embedder_name,
                    claim_vecs=cvecs, sent_vecs=svecs, neighbours=spec.neighbours)


def head_fold(
    hd: HeadData, q: Array, fold_of: IntArray, f: int
) -> tuple[dict[int, str], tuple[float, float]]:
    """Held-out labels for fold ``f`` and the ``(l2, alpha)`` chosen without it. ``q``
    holds out-of-fold stance probabilities for every retrieved pair."""
    tr = fold_of != f
    bank = np.flatnonzero(tr)
    h = head_matrix(hd, q, bank)  # held-out claims read neighbours among training claims
    l2, alpha = choose_head(h[tr], hd.y[tr], fold_of[tr], dim=hd.dim)
    head = fit_head(h[tr], hd.y[tr], hd, l2, alpha, bank)
    held = np.flatnonzero(~tr)
    return dict(zip((int(g) for g in held), predict(head, h[held]), strict=True)), (l2, alpha)
