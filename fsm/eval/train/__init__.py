"""Training of the learned stance judge and its claim-level verdict head, with K-fold
cross-validation by claim, on one softmax-regression solver.

May import the engine core, ``claimfsm.eval``'s other modules, ``skills`` and ``state``;
needs numpy.
"""

from __future__ import annotations

from claimfsm._base.lazy import lazy_exports

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "ALPHAS": "claimfsm.eval.train.verdict",
    "Fit": "claimfsm.eval.train.judge",
    "GRID_REFUTE": "claimfsm.eval.train.thresholds",
    "GRID_SUPPORT": "claimfsm.eval.train.thresholds",
    "HeadData": "claimfsm.eval.train.verdict",
    "HeadSpec": "claimfsm.eval.train.head",
    "L2S": "claimfsm.eval.train.verdict",
    "Pairs": "claimfsm.eval.train.judge",
    "Retrieved": "claimfsm.eval.train.retrieved",
    "TOPS": "claimfsm.eval.train.retrieved",
    "TrainReport": "claimfsm.eval.train.judge",
    "choose_head": "claimfsm.eval.train.verdict",
    "choose_thresholds": "claimfsm.eval.train.thresholds",
    "claim_verdicts": "claimfsm.eval.train.thresholds",
    "collect_pairs": "claimfsm.eval.train.judge",
    "fit": "claimfsm.eval.train.judge",
    "fit_head": "claimfsm.eval.train.verdict",
    "fit_softmax": "claimfsm.eval.train.softmax",
    "head_data": "claimfsm.eval.train.head",
    "head_fold": "claimfsm.eval.train.head",
    "head_matrix": "claimfsm.eval.train.verdict",
    "labels_of": "claimfsm.eval.train.verdict",
    "predict": "claimfsm.eval.train.verdict",
    "retrieve_for_training": "claimfsm.eval.train.retrieved",
    "train": "claimfsm.eval.train.judge",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
