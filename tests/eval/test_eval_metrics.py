"""The scorer's arithmetic, checked by hand on small examples."""

from __future__ import annotations

import pytest

from claimfsm.eval.data import CLAIM_LABELS
from claimfsm.eval.metrics import classification, doc_of, retrieval, strict_hit


def test_always_supports_on_the_climate_fever_mix_gives_the_known_baseline() -> None:
    # 536 / 195 / 381 / 116 claims, all answered SUPPORTS (the baseline).
    counts = {"SUPPORTS": 536, "REFUTES": 195, "NOT_ENOUGH_INFO": 381, "DISPUTED": 116}
    pairs = [(lab, "SUPPORTS") for lab, n in counts.items() for _ in range(n)]
    c = classification(pairs, CLAIM_LABELS)
    assert c.accuracy == pytest.approx(0.4365, abs=1e-4)
    assert c.macro_f1 == pytest.approx(0.152, abs=1e-3)
    assert c.per_class["REFUTES"] == 0.0
    assert c.confusion["DISPUTED"] == {"SUPPORTS": 116, "REFUTES": 0, "NOT_ENOUGH_INFO": 0,
                                       "DISPUTED": 0}


def test_per_class_f1_by_hand() -> None:
    pairs = [("A", "A"), ("A", "B"), ("B", "B"), ("B", "B"), ("C", "A")]
    c = classification(pairs, ("A", "B", "C"))
    # A: tp 1, fp 1, fn 1 -> 0.5; B: tp 2, fp 1, fn 0 -> 0.8; C: never predicted -> 0.
    assert c.per_class == {"A": 0.5, "B": 0.8, "C": 0.0}
    assert c.macro_f1 == pytest.approx((0.5 + 0.8) / 3, abs=1e-4)
    assert c.accuracy == 0.6
    assert c.confusion["C"]["A"] == 1


def test_a_prediction_outside_the_labels_is_wrong_and_shown() -> None:
    c = classification([("A", "FAILED")], ("A", "B"))
    assert c.accuracy == 0.0 and c.confusion["A"]["FAILED"] == 1


def test_empty_input_scores_zero() -> None:
    c = classification([], ("A",))
    assert c.accuracy == 0.0 and c.macro_f1 == 0.0


def test_recall_and_hit_by_hand() -> None:
    ranked = [["x", "g1", "y", "z", "w", "g2"], ["a", "b"], ["q"]]
    gold = [frozenset({"g1", "g2"}), frozenset({"zz"}), frozenset()]
    r = retrieval(ranked, gold)
    assert r.claims == 2  # the claim without gold evidence does not count
    assert r.recall_at_5 == 0.25  # (1/2 + 0) / 2
    assert r.recall_at_10 == 0.5
    assert r.hit_at_5 == 0.5


def test_retrieval_without_gold_is_zero() -> None:
    assert retrieval([["a"]], [frozenset()]).claims == 0


def test_doc_of_strips_the_sentence_index() -> None:
    assert doc_of("Polar bear:12#0") == "Polar bear:12"
    assert doc_of("kb-fact-3") == "kb-fact-3"


S, R = frozenset({"s"}), frozenset({"r"})


@pytest.mark.parametrize(
    ("gold", "pred", "cites", "ok"),
    [
        ("SUPPORTS", "SUPPORTS", ["x", "s"], True),
        ("SUPPORTS", "SUPPORTS", ["x", "r"], False),  # right label, wrong evidence
        ("SUPPORTS", "SUPPORTS", ["a", "b", "c", "d", "e", "s"], False),  # only top 5
        ("REFUTES", "REFUTES", ["r"], True),
        ("REFUTES", "SUPPORTS", ["s"], False),
        ("DISPUTED", "DISPUTED", ["s", "r"], True),
        ("DISPUTED", "DISPUTED", ["s"], False),
        ("NOT_ENOUGH_INFO", "NOT_ENOUGH_INFO", [], True),
    ],
)
def test_strict_needs_the_label_and_gold_citations(
    gold: str, pred: str, cites: list[str], ok: bool
) -> None:
    assert strict_hit(gold, pred, cites, S, R) is ok
