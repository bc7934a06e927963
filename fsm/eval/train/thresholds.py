"""The verdict thresholds: the dataset's rule from clear sentence labels to a claim's
verdict, and the grid search that chooses the ``p(SUPPORTS)`` and ``p(REFUTES)``
thresholds (and, on retrieved evidence, how many ranked sentences to judge).

Its own module because it is what training scores a fit by, apart from the fitting:
:func:`claimfsm.eval.train.judge.train` chooses thresholds on out-of-fold probabilities
with these, fold by fold and once more for the file it writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import CLAIM_LABELS
from claimfsm.eval.metrics import classification
from claimfsm.eval.train.retrieved import TOPS, Retrieved

__all__ = [
    "GRID_REFUTE",
    "GRID_SUPPORT",
    "Choice",
    "choose",
    "choose_thresholds",
    "claim_verdicts",
    "sentence_labels",
    "verdicts",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

GRID_SUPPORT: tuple[float, ...] = tuple(round(0.2 + 0.05 * i, 2) for i in range(15))
"""Candidate ``p(SUPPORTS)`` thresholds (0.2 .. 0.9)."""
GRID_REFUTE: tuple[float, ...] = tuple(round(0.2 + 0.05 * i, 2) for i in range(16))
"""Candidate ``p(REFUTES)`` thresholds (0.2 .. 0.95)."""


def _clear(p: Array, st: float, rt: float) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    # Same rule as StanceModel.label: REFUTES when past its threshold by at least as much
    # as SUPPORTS is past its own, else SUPPORTS when past its threshold.
    ps, pr = p[:, 0], p[:, 1]
    is_r = (pr >= rt) & (pr - rt >= ps - st)
    return (~is_r) & (ps >= st), is_r


def sentence_labels(p: Array, st: float, rt: float) -> list[str]:
    """Each pair's clear label under thresholds ``(st, rt)``."""
    is_s, is_r = _clear(p, st, rt)
    return ["REFUTES" if r else "SUPPORTS" if s else "NOT_ENOUGH_INFO"
            for s, r in zip(is_s, is_r, strict=True)]


def claim_verdicts(p: Array, group: IntArray, n: int, st: float, rt: float) -> list[str]:
    """The dataset's rule over each claim's sentences: DISPUTED when both a clear
    SUPPORTS and a clear REFUTES, else SUPPORTS, else REFUTES, else NOT_ENOUGH_INFO."""
    is_s, is_r = _clear(p, st, rt)
    any_s = np.bincount(group, weights=is_s, minlength=n) > 0
    any_r = np.bincount(group, weights=is_r, minlength=n) > 0
    return ["DISPUTED" if s and r else "SUPPORTS" if s else "REFUTES" if r
            else "NOT_ENOUGH_INFO" for s, r in zip(any_s, any_r, strict=True)]


def _objective(gold: Sequence[str], pred: Sequence[str]) -> float:
    c = classification(zip(gold, pred, strict=True), CLAIM_LABELS)
    return c.accuracy + c.macro_f1


def _best(
    p: Array, group: IntArray, gold: Sequence[str], claims: IntArray
) -> tuple[float, float, float]:
    local = np.searchsorted(claims, group)
    labels = [gold[int(g)] for g in claims]
    best = (-1.0, GRID_SUPPORT[0], GRID_REFUTE[0])
    for st in GRID_SUPPORT:
        for rt in GRID_REFUTE:
            val = _objective(labels, claim_verdicts(p, local, len(claims), st, rt))
            if val > best[0] + 1e-12:
                best = (val, st, rt)
    return best


def choose_thresholds(
    p: Array, group: IntArray, gold: Sequence[str], claims: IntArray | None = None
) -> tuple[float, float]:
    """The grid point with the best verdict accuracy + macro-F1 over ``claims`` (default:
    those in ``group``; a claim without pairs counts as NOT_ENOUGH_INFO). Ties: the first."""
    ids = np.unique(group) if claims is None else np.sort(claims)
    _, st, rt = _best(p, group, gold, ids)
    return st, rt


@dataclass(frozen=True)
class Choice:
    """Chosen thresholds: judge the ``top`` ranked sentences, clear at ``st`` and ``rt``."""

    top: int
    st: float
    rt: float


def choose(
    p: Array, q: Array | None, group: IntArray, gold: Sequence[str],
    retrieved: Retrieved | None, claims: IntArray,
    mask: npt.NDArray[np.bool_], rmask: npt.NDArray[np.bool_] | None,
) -> Choice:
    """Thresholds (and ``top``) on the retrieved evidence when there is some, else on
    the annotated sentences (``p``, each pair's claim in ``group``); ``gold``: the claims'
    labels. Only ``claims`` (and the rows under the masks) count."""
    if retrieved is None or q is None or rmask is None:
        st, rt = choose_thresholds(p[mask], group[mask], gold, claims)
        return Choice(5, st, rt)
    best = (-1.0, Choice(5, 0.5, 0.5))
    for top in TOPS:
        m = rmask & (retrieved.rank < top)
        val, st, rt = _best(q[m], retrieved.group[m], gold, claims)
        if val > best[0] + 1e-12:
            best = (val, Choice(top, st, rt))
    return best[1]


def verdicts(
    p: Array, group: IntArray, claims: IntArray, c: Choice
) -> dict[int, str]:
    """The verdict of each of ``claims`` under the choice ``c``, by claim index."""
    local = np.searchsorted(claims, group)
    return dict(zip((int(g) for g in claims),
                    claim_verdicts(p, local, len(claims), c.st, c.rt), strict=True))
