"""The verdict head's neighbour features: how a claim's nearest training claims were
labelled, never counting the claim itself, deterministic, and read by a trained head."""

from __future__ import annotations

import pytest

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.eval.train.retrieved import Retrieved  # noqa: E402
from claimfsm.eval.train.verdict import HeadData, head_matrix, neighbour_rows  # noqa: E402
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES  # noqa: E402
from claimfsm.skills.stance.neighbours import NEIGHBOUR_FEATURES, neighbour_matrix  # noqa: E402
from claimfsm.skills.stance.verdict_head import VerdictHead, head_feature_names  # noqa: E402

COL = {name: i for i, name in enumerate(NEIGHBOUR_FEATURES)}


def _unit(rows: list[list[float]]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


BANK = _unit([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0, 1]])
LABELS = np.array([1, 1, 0, 3])  # REFUTES, REFUTES, SUPPORTS, DISPUTED


def test_a_claim_reads_the_labels_of_its_nearest_claims() -> None:
    row = neighbour_matrix(_unit([[1, 0.05, 0]]), BANK, LABELS, 2)[0]
    assert len(row) == len(NEIGHBOUR_FEATURES)
    assert row[COL["nn_share_ref"]] == pytest.approx(1.0)  # both neighbours refute
    assert row[COL["nn_share_sup"]] == 0.0 and row[COL["nn_best_sup"]] == 0.0
    assert row[COL["nn_best"]] == pytest.approx(row[COL["nn_best_ref"]])
    wider = neighbour_matrix(_unit([[1, 0.05, 0]]), BANK, LABELS, 3)[0]
    assert 0.0 < wider[COL["nn_share_sup"]] < wider[COL["nn_share_ref"]]


def test_a_claim_in_the_bank_never_counts_itself() -> None:
    own = neighbour_matrix(BANK[:1], BANK, LABELS, 1, self_index=np.array([0]))[0]
    assert own[COL["nn_best"]] == pytest.approx(float(BANK[0] @ BANK[1]))  # not 1.0
    alone = neighbour_matrix(BANK[3:], BANK, LABELS, 1, self_index=np.array([3]))[0]
    assert alone[COL["nn_share_dis"]] == 0.0  # the only DISPUTED claim is itself


def test_features_are_deterministic_and_empty_banks_give_zeros() -> None:
    q = _unit([[0.5, 0.5, 0.1], [0, 0.2, 1]])
    assert np.array_equal(neighbour_matrix(q, BANK, LABELS, 3),
                          neighbour_matrix(q.copy(), BANK.copy(), LABELS.copy(), 3))
    assert not neighbour_matrix(q, BANK[:0], LABELS[:0], 3).any()


def _head_data(claims: np.ndarray, y: np.ndarray) -> HeadData:
    n = len(y)
    retrieved = Retrieved(pairs=(("c", "s"),) * n, group=np.arange(n),
                          rank=np.zeros(n, dtype=np.int64), ids=tuple(f"d{i}" for i in range(n)))
    lex = np.zeros((n, len(LEXICAL_FEATURES)))
    return HeadData(retrieved=retrieved, lex=lex, claim_lex=lex, y=y, claim_vecs=claims,
                    sent_vecs=claims, neighbours=2)


def test_held_out_claims_read_only_the_bank() -> None:
    d = _head_data(BANK, LABELS)
    q = np.full((4, 3), 1 / 3)
    bank = np.array([0, 2, 3])  # claim 1 held out
    rows = neighbour_rows(d, bank)
    assert rows is not None
    # claim 0 (in the bank) cannot see itself, and the other REFUTES claim (1) is held
    # out, so claim 0 has no REFUTES neighbour; claim 1 reads claim 0 from the bank
    assert rows[0, COL["nn_share_ref"]] == 0.0
    assert rows[1, COL["nn_best_ref"]] == pytest.approx(float(BANK[1] @ BANK[0]))
    h = head_matrix(d, q, bank)
    assert h.shape == (4, len(head_feature_names(3, neighbours=True)))


def test_a_head_without_a_bank_has_no_neighbour_features() -> None:
    head = VerdictHead(features=("a",), weights=np.zeros((4, 1)), bias=np.zeros(4),
                       mean=np.zeros(1), scale=np.ones(1), prior=np.full(4, 0.25))
    assert head.neighbours(BANK[0]) is None
    banked = VerdictHead(**{**head.__dict__, "bank": BANK,
                            "bank_labels": LABELS.astype(np.float64), "k": 1})
    near = banked.neighbours(BANK[0])
    assert near is not None and near[COL["nn_share_ref"]] == pytest.approx(1.0)
