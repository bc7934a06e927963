"""What ``claimfsm train`` reports (:class:`TrainReport`), and what it refuses
(:class:`NothingToLearn`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.eval.metrics import ClassScores, RetrievalScores

__all__ = ["NothingToLearn", "TrainReport"]


class NothingToLearn(ClaimFsmError):
    """Training data a model cannot be fitted on: no (claim, sentence) pairs, pairs of
    one stance label only, a fold whose training part has none, or a fit that came out
    with non-finite numbers. Nothing is written."""

    code = ErrorCode.NOTHING_TO_LEARN

    def __init__(self, msg: str) -> None:
        super().__init__(msg, field="dataset")


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
    alignment: dict[str, list[float]] = {}
    """Each alignment feature's weight in the written stance model, per stance class
    (SUPPORTS, REFUTES, NOT_ENOUGH_INFO; standardised features)."""
    support_t: float
    refute_t: float
    top: int
    out: str
