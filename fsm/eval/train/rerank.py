"""Training the evidence reranker (:mod:`claimfsm.skills.stance.rerank`), cross-validated by claim.

Rows are the engine's own retrieved sentences (every subclaim's list, as EXTRACT kept
it); a row is positive when its sentence is annotated SUPPORTS or REFUTES for the claim
(what recall@k counts). For each outer fold, the reranker is fitted on the other folds'
claims, with the annotation history of those claims only (a training row never counts
its own claim), and scores the held-out claims; those out-of-fold scores give the
cross-validated recall figures and re-order the retrieved lists before the stance
thresholds and the verdict head are chosen (at run time they read the re-ordered
lists). The reranker written is fitted on every claim, its history every claim's.
Plain (not class-balanced) logistic regression, the shared softmax solver; no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import Dataset
from claimfsm.eval.metrics import RetrievalScores, doc_of, retrieval
from claimfsm.eval.train.retrieved import Retrieved
from claimfsm.eval.train.softmax import fit_softmax
from claimfsm.eval.train.verdict import HeadData
from claimfsm.skills.stance.rerank import (
    RERANK_FEATURES,
    History,
    Reranker,
    history_rows,
    rerank_row,
)

__all__ = ["RerankResult", "train_reranker"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class RerankResult:
    """The re-ordered inputs, the reranker written, and the CV recall figures."""

    retrieved: Retrieved
    order: IntArray  # new row i is old row order[i]
    reranker: Reranker
    before: RetrievalScores
    after: RetrievalScores


def _history(data: Dataset, bank: IntArray) -> History:
    out: dict[str, list[tuple[int, bool]]] = {}
    for pos, c in enumerate(bank.tolist()):
        for e in data.gold[c].evidences:
            out.setdefault(e.evidence_id, []).append((pos, e.label != "NOT_ENOUGH_INFO"))
    return out


def _rows(r: Retrieved, hd: HeadData, data: Dataset, bank: IntArray) -> Array:
    assert hd.claim_vecs is not None and hd.sent_vecs is not None
    history = _history(data, bank)
    own = np.full(len(data.claims), -1, dtype=np.int64)
    own[bank] = np.arange(len(bank))
    subs: dict[int, set[str]] = {}
    for g, (sub, _) in zip(r.group.tolist(), r.pairs, strict=True):
        subs.setdefault(g, set()).add(sub)
    vecs = hd.claim_vecs[bank]
    out = np.zeros((len(r.pairs), len(RERANK_FEATURES)))
    for g in np.unique(r.group).tolist():
        idx = np.flatnonzero(r.group == g)
        cv = hd.claim_vecs[g]
        hist = history_rows([doc_of(r.ids[i]) for i in idx], cv, history, vecs,
                            exclude=int(own[g]))
        for k, i in enumerate(idx.tolist()):
            out[i] = rerank_row(int(r.rank[i]), float(r.value[i]), float(r.coverage[i]),
                                len(subs[g]), hist[k], float(hd.sent_vecs[i] @ cv),
                                hd.lex[i].tolist())
    return out


def _fit(x: Array, y: IntArray, history: History, l2: float = 1e-3) -> Reranker:
    f = fit_softmax(x, y, k=2, l2=l2, iters=400, balanced=False)
    ids, bank, dec = [], [], []
    for doc in sorted(history):
        for b, d in history[doc]:
            ids.append(doc)
            bank.append(b)
            dec.append(int(d))
    return Reranker(weights=f.weights[1] - f.weights[0], bias=float(f.bias[1] - f.bias[0]),
                    mean=f.mean, scale=f.scale, history_ids=tuple(ids),
                    history_bank=np.asarray(bank, dtype=np.int64),
                    history_decisive=np.asarray(dec, dtype=np.int64))


def _order(r: Retrieved, score: Array) -> IntArray:
    """Rows re-ordered within each (claim, subclaim) list by ``score`` (ties: old rank)."""
    keys = [(int(r.group[i]), r.pairs[i][0]) for i in range(len(r.pairs))]
    blocks = {k: n for n, k in enumerate(dict.fromkeys(keys))}
    out: IntArray = np.asarray(sorted(range(len(keys)), key=lambda i: (
        blocks[keys[i]], -float(score[i]), int(r.rank[i]))), dtype=np.int64)
    return out


def _ranked(r: Retrieved, score: Array, n: int) -> list[tuple[str, ...]]:
    # As fsm.eval.run.ranked_documents: every list merged by score, documents once.
    per: list[list[tuple[float, int, str]]] = [[] for _ in range(n)]
    for i in range(len(r.pairs)):
        per[int(r.group[i])].append((-float(score[i]), i, doc_of(r.ids[i])))
    return [tuple(dict.fromkeys(d for *_, d in sorted(p))) for p in per]


def train_reranker(data: Dataset, r: Retrieved, hd: HeadData, fold_of: IntArray) -> RerankResult:
    """Cross-validate (by the folds of ``fold_of``), re-order ``r`` by the out-of-fold
    scores, and fit the reranker written on every claim."""
    gold = [g.decisive for g in data.gold]
    y = np.asarray([int(doc_of(r.ids[i]) in gold[int(r.group[i])])
                    for i in range(len(r.pairs))], dtype=np.int64)
    score = np.zeros(len(y))
    pf = fold_of[r.group]
    for f in sorted({int(v) for v in fold_of}):
        bank = np.flatnonzero(fold_of != f)
        x = _rows(r, hd, data, bank)
        model = _fit(x[pf != f], y[pf != f], _history(data, bank))
        score[pf == f] = model.probabilities(x[pf == f])
    n = len(data.claims)
    before = retrieval(_ranked(r, r.value, n), gold)
    after = retrieval(_ranked(r, score, n), gold)
    order = _order(r, score)
    rank = np.zeros(len(order), dtype=np.int64)
    new = replace(r, pairs=tuple(r.pairs[i] for i in order), group=r.group[order],
                  ids=tuple(r.ids[i] for i in order), value=score[order],
                  coverage=r.coverage[order], rank=rank)
    pos: dict[tuple[int, str], int] = {}
    for i in range(len(order)):
        key = (int(new.group[i]), new.pairs[i][0])
        rank[i] = pos.get(key, 0)
        pos[key] = rank[i] + 1
    everyone = np.arange(n)
    final = _fit(_rows(r, hd, data, everyone), y, _history(data, everyone))
    return RerankResult(retrieved=new, order=order, reranker=final, before=before, after=after)
