"""What ``claimfsm train`` reports (:class:`TrainReport`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from claimfsm.eval.metrics import ClassScores, RetrievalScores

__all__ = ["TrainReport"]


class TrainReport(BaseModel):
    """What ``claimfsm train`` prints: the data, the CV figures, the model written."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    claims: int
    pairs: int
    folds: int
    features: int
    embedder: str | None
    cv_stance: ClassScores
    cv_verdict: ClassScores
    cv_verdict_retrieved: ClassScores | None = None
    """The verdict on the engine's own retrieved evidence (with ``--corpus``)."""
    fold_thresholds: list[tuple[float, float]]
    cv_verdict_head: ClassScores | None = None
    """The claim-level head's verdict on the engine's retrieved evidence (held-out claims)."""
    head_params: list[tuple[float, float]] = []
    """The head's ``(l2, alpha)`` chosen in each fold (inner cross-validation)."""
    head: tuple[float, float] | None = None
    """The written head's ``(l2, alpha)``, or None when it has no head."""
    head_embedder: str | None = None
    cv_rerank: tuple[RetrievalScores, RetrievalScores] | None = None
    """Retrieval before and after the evidence reranker (held-out claims), when trained."""
    support_t: float
    refute_t: float
    top: int
    out: str
