"""Whether a learned model was trained on the claims being evaluated.

A model from ``claimfsm train`` stores its training claims' embeddings and labels (the
verdict head's neighbour bank) and their annotated sentences (the evidence reranker's
history). Scored on those same claims it looks far better than on new ones, so
``claimfsm eval`` counts them and warns: a claim whose embedding equals a bank vector
(cosine >= :data:`SAME`) was seen in training.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SAME", "seen_claims"]

SAME = 0.9999
"""Cosine at or above which a claim counts as a training claim."""


def seen_claims(model_path: str, claims: Sequence[str]) -> int:
    """How many of ``claims`` are among the model's training claims; 0 when the model has
    no bank or its embedder is not available here."""
    try:
        import numpy as np

        from claimfsm.skills.stance.learned import head_embedder
        from claimfsm.skills.stance.model import ModelError, cached_model
    except ImportError:
        return 0
    try:
        model, _, _ = cached_model(model_path)
    except ModelError:
        return 0
    head = model.verdict
    if head is None or head.bank is None or not len(head.bank) or not claims:
        return 0
    emb, _ = head_embedder(model)
    if emb is None:
        return 0
    vecs = np.asarray(emb.encode(list(claims)), dtype=np.float64)
    best = (vecs @ np.asarray(head.bank, dtype=np.float64).T).max(axis=1)
    return int((best >= SAME).sum())
