"""Evaluation and training: reading a labelled dataset, the eval run (a full session
per claim on a fresh in-memory index), retrieval/stance/verdict metrics, dense vectors
for a corpus, and training of the learned judge (``claimfsm.eval.train``).

Part of fsm's tools: it may import the engine core, ``skills`` and ``state``; never
``claimfsm.cli``, ``claimfsm.bench``, ``claimfsm.replay`` or ``claimfsm.testing``. numpy is needed
only by the training and embedding modules, which load on first use.
"""

from __future__ import annotations

from claimfsm._base.lazy import lazy_exports

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "CACHE_DIR": "claimfsm.eval.embed",
    "CLAIM_LABELS": "claimfsm.eval.data",
    "ClaimLabel": "claimfsm.eval.data",
    "ClaimRun": "claimfsm.eval.run",
    "ClassScores": "claimfsm.eval.metrics",
    "Dataset": "claimfsm.eval.data",
    "DatasetError": "claimfsm.eval.data",
    "EVAL_CONFIG": "claimfsm.eval.run",
    "EVAL_NOW": "claimfsm.eval.run",
    "EVIDENCE_LABELS": "claimfsm.eval.data",
    "EvalClaim": "claimfsm.eval.data",
    "EvalReport": "claimfsm.eval.run",
    "EvidenceLabel": "claimfsm.eval.data",
    "GoldClaim": "claimfsm.eval.data",
    "GoldEvidence": "claimfsm.eval.data",
    "GoldRun": "claimfsm.eval.run",
    "PLACES": "claimfsm.eval.metrics",
    "RetrievalScores": "claimfsm.eval.metrics",
    "attach_vectors": "claimfsm.eval.embed",
    "cache_path": "claimfsm.eval.embed",
    "classification": "claimfsm.eval.metrics",
    "doc_of": "claimfsm.eval.metrics",
    "evaluate": "claimfsm.eval.run",
    "judge_sentences": "claimfsm.eval.run",
    "open_engine": "claimfsm.eval.run",
    "ranked_documents": "claimfsm.eval.run",
    "read_dataset": "claimfsm.eval.data",
    "retrieval": "claimfsm.eval.metrics",
    "run_claim": "claimfsm.eval.run",
    "score": "claimfsm.eval.run",
    "strict_hit": "claimfsm.eval.metrics",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
