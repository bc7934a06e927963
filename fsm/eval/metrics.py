"""Pure scoring functions for ``claimfsm eval``: classification, retrieval, strict score.

Nothing here runs the engine; every function takes predictions and gold values and
returns numbers, so each can be checked by hand on a few examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from claimfsm._base.models import Frozen

__all__ = [
    "PLACES",
    "ClassScores",
    "RetrievalScores",
    "classification",
    "doc_of",
    "retrieval",
    "strict_hit",
]

PLACES = 4
"""Decimal places of every reported figure."""


class ClassScores(Frozen):
    """Accuracy, macro-F1 over every label, per-label F1, precision and recall, and
    ``confusion[gold][pred]``."""

    accuracy: float
    macro_f1: float
    per_class: dict[str, float]
    precision: dict[str, float]
    """Per label: the share of its predictions that are right (0 when never predicted)."""
    recall: dict[str, float]
    """Per label: the share of its gold claims predicted as it (0 when it never occurs)."""
    confusion: dict[str, dict[str, int]]


class RetrievalScores(Frozen):
    """Mean recall at 5, 10 and 20 and the share of claims with a hit in the top 5."""

    recall_at_5: float
    recall_at_10: float
    recall_at_20: float
    hit_at_5: float
    claims: int


def _round(x: float) -> float:
    return round(x, PLACES) + 0.0


def _f1(tp: int, fp: int, fn: int) -> float:
    # An undefined precision or recall counts as 0 (a label never predicted has F1 0).
    if tp == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall)


def classification(pairs: Iterable[tuple[str, str]], labels: Sequence[str]) -> ClassScores:
    """Score ``(gold, predicted)`` pairs over ``labels`` (macro-F1 averages all of them,
    including labels that never occur). A prediction outside ``labels`` is wrong and
    appears in the confusion matrix under its own name."""
    confusion: dict[str, dict[str, int]] = {g: dict.fromkeys(labels, 0) for g in labels}
    total = right = 0
    for gold, pred in pairs:
        row = confusion.setdefault(gold, dict.fromkeys(labels, 0))
        row[pred] = row.get(pred, 0) + 1
        total += 1
        right += gold == pred
    per_class: dict[str, float] = {}
    precision: dict[str, float] = {}
    recall: dict[str, float] = {}
    for lab in labels:
        tp = confusion.get(lab, {}).get(lab, 0)
        fn = sum(confusion.get(lab, {}).values()) - tp
        fp = sum(row.get(lab, 0) for g, row in confusion.items() if g != lab)
        per_class[lab] = _round(_f1(tp, fp, fn))
        precision[lab] = _round(tp / (tp + fp) if tp + fp else 0.0)
        recall[lab] = _round(tp / (tp + fn) if tp + fn else 0.0)
    macro = sum(per_class.values()) / len(labels) if labels else 0.0
    return ClassScores(accuracy=_round(right / total if total else 0.0), macro_f1=_round(macro),
                       per_class=per_class, confusion=confusion, precision=precision,
                       recall=recall)


def doc_of(sentence_id: str) -> str:
    """The document id of an evidence sentence id: ``"Article:12#0"`` -> ``"Article:12"``."""
    return sentence_id.split("#", 1)[0]


def retrieval(ranked: Sequence[Sequence[str]], gold: Sequence[frozenset[str]]) -> RetrievalScores:
    """Recall@k and hit@5 of ranked document ids against gold ids, averaged over the
    claims whose gold set is not empty (others do not count)."""
    pairs = [(r, g) for r, g in zip(ranked, gold, strict=True) if g]
    if not pairs:
        return RetrievalScores(recall_at_5=0.0, recall_at_10=0.0, recall_at_20=0.0,
                               hit_at_5=0.0, claims=0)

    def recall(k: int) -> float:
        return sum(len(g & set(r[:k])) / len(g) for r, g in pairs) / len(pairs)

    hit = sum(1 for r, g in pairs if g & set(r[:5])) / len(pairs)
    return RetrievalScores(recall_at_5=_round(recall(5)), recall_at_10=_round(recall(10)),
                           recall_at_20=_round(recall(20)), hit_at_5=_round(hit),
                           claims=len(pairs))


def strict_hit(
    gold_label: str, pred_label: str, cited_docs: Sequence[str],
    supports: frozenset[str], refutes: frozenset[str],
) -> bool:
    """The strict (FEVER-style) test for one claim: the label must be right, and a
    SUPPORTS or REFUTES verdict must cite, among its first five citations, a gold
    sentence with that stance; DISPUTED must cite one of each; NOT_ENOUGH_INFO needs the
    label only."""
    if gold_label != pred_label:
        return False
    top = set(cited_docs[:5])
    if pred_label == "SUPPORTS":
        return bool(top & supports)
    if pred_label == "REFUTES":
        return bool(top & refutes)
    if pred_label == "DISPUTED":
        return bool(top & supports) and bool(top & refutes)
    return True
