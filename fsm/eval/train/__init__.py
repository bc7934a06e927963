"""Training of the learned stance judge and its claim-level verdict head, with K-fold
cross-validation by claim, on one softmax-regression solver.

May import the engine core, ``fsm.eval``'s other modules, ``skills`` and ``state``;
needs numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "ALPHAS": "fsm.eval.train.verdict",
    "Fit": "fsm.eval.train.judge",
    "GRID_REFUTE": "fsm.eval.train.judge",
    "GRID_SUPPORT": "fsm.eval.train.judge",
    "HeadData": "fsm.eval.train.verdict",
    "HeadSpec": "fsm.eval.train.head",
    "L2S": "fsm.eval.train.verdict",
    "Pairs": "fsm.eval.train.judge",
    "Retrieved": "fsm.eval.train.retrieved",
    "TOPS": "fsm.eval.train.retrieved",
    "TrainReport": "fsm.eval.train.judge",
    "choose_head": "fsm.eval.train.verdict",
    "choose_thresholds": "fsm.eval.train.judge",
    "claim_verdicts": "fsm.eval.train.judge",
    "collect_pairs": "fsm.eval.train.judge",
    "fit": "fsm.eval.train.judge",
    "fit_head": "fsm.eval.train.verdict",
    "fit_softmax": "fsm.eval.train.softmax",
    "head_data": "fsm.eval.train.head",
    "head_fold": "fsm.eval.train.head",
    "head_matrix": "fsm.eval.train.verdict",
    "labels_of": "fsm.eval.train.verdict",
    "predict": "fsm.eval.train.verdict",
    "retrieve_for_training": "fsm.eval.train.retrieved",
    "train": "fsm.eval.train.judge",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
