"""What ``claimfsm train`` refuses before fitting and before writing: data a model
cannot be fitted on, and a fit that came out with a non-finite number
(:class:`~claimfsm.eval.train.report.NothingToLearn`, nothing written either way)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from claimfsm.eval.train.report import NothingToLearn
from claimfsm.skills.stance.lexical import LABELS
from claimfsm.skills.stance.model import StanceModel, non_finite

__all__ = ["finite", "learnable"]


def learnable(y: npt.NDArray[np.int64], pair_folds: npt.NDArray[np.int64], folds: int) -> None:
    """:class:`NothingToLearn` unless every fit of the cross-validation has pairs of at
    least two stance labels to learn from (else it divides by zero: NaN weights). ``y``:
    each pair's stance label; ``pair_folds``: the fold of each pair's claim."""
    if not len(y):
        raise NothingToLearn("dataset: no (claim, sentence) pairs: no claim has annotated "
                             "evidence sentences ('evidences' is empty everywhere)")
    labels = sorted({LABELS[int(c)] for c in y})
    if len(labels) < 2:
        raise NothingToLearn(f"dataset: every (claim, sentence) pair is {labels[0]}; a "
                             "stance model needs pairs of at least two labels")
    empty = [f + 1 for f in range(folds) if not np.any(pair_folds != f)]
    if empty:
        raise NothingToLearn(f"dataset: every pair belongs to claims of fold {empty[0]}, so "
                             "its training part is empty; add annotated claims or lower "
                             "--folds")


def finite(model: StanceModel) -> None:
    """:class:`NothingToLearn` for a fitted model holding a NaN or an infinity."""
    bad = non_finite(model)
    if bad is not None:
        raise NothingToLearn(f"the fitted model's {bad} holds NaN or infinity; nothing "
                             "written")
