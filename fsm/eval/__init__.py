"""Evaluation and training: reading a labelled dataset, the eval run (a full session
per claim on a fresh in-memory index), retrieval/stance/verdict metrics, dense vectors
for a corpus, and training of the learned judge (``fsm.eval.train``).

Part of fsm's tools: it may import the engine core, ``skills`` and ``state``; never
``fsm.cli``, ``fsm.bench``, ``fsm.replay`` or ``fsm.testing``. numpy is needed only by
the training and embedding modules, which load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "CACHE_DIR": "fsm.eval.embed",
    "CLAIM_LABELS": "fsm.eval.data",
    "ClaimLabel": "fsm.eval.data",
    "ClaimRun": "fsm.eval.run",
    "ClassScores": "fsm.eval.metrics",
    "Dataset": "fsm.eval.data",
    "DatasetError": "fsm.eval.data",
    "EVAL_CONFIG": "fsm.eval.run",
    "EVAL_NOW": "fsm.eval.run",
    "EVIDENCE_LABELS": "fsm.eval.data",
    "EvalClaim": "fsm.eval.data",
    "EvalReport": "fsm.eval.run",
    "EvidenceLabel": "fsm.eval.data",
    "GoldClaim": "fsm.eval.data",
    "GoldEvidence": "fsm.eval.data",
    "GoldRun": "fsm.eval.run",
    "PLACES": "fsm.eval.metrics",
    "RetrievalScores": "fsm.eval.metrics",
    "attach_vectors": "fsm.eval.embed",
    "cache_path": "fsm.eval.embed",
    "classification": "fsm.eval.metrics",
    "doc_of": "fsm.eval.metrics",
    "evaluate": "fsm.eval.run",
    "judge_sentences": "fsm.eval.run",
    "open_engine": "fsm.eval.run",
    "ranked_documents": "fsm.eval.run",
    "read_dataset": "fsm.eval.data",
    "retrieval": "fsm.eval.metrics",
    "run_claim": "fsm.eval.run",
    "score": "fsm.eval.run",
    "strict_hit": "fsm.eval.metrics",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
