"""The claim-level verdict head: its rows, its fit and hyperparameters, the model file,
``claimfsm train --corpus`` with a head, and AGGREGATE labelling a session with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.cli.main import main  # noqa: E402
from claimfsm.engine.bindings import DEFAULT_BINDINGS  # noqa: E402
from claimfsm.eval.data import read_dataset  # noqa: E402
from claimfsm.eval.run import EVAL_CONFIG, evaluate, open_engine  # noqa: E402
from claimfsm.eval.train.verdict import _fit, choose_head  # noqa: E402
from claimfsm.skills.embed import HashingEmbedder  # noqa: E402
from claimfsm.skills.stance.model import cached_model, load_model  # noqa: E402
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES  # noqa: E402
from claimfsm.skills.stance.verdict_head import (  # noqa: E402
    EVIDENCE_FEATURES,
    SIMS,
    VERDICTS,
    VerdictHead,
    claim_row,
    head_feature_names,
)
from claimfsm.state.model import SessionState  # noqa: E402
from tests.support.stance_data import train_small, write_corpus, write_dataset  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"


def _lex(n: int) -> np.ndarray:
    return np.zeros((n, len(LEXICAL_FEATURES)))


def test_claim_rows_match_their_names() -> None:
    probs = np.array([[0.9, 0.05, 0.05], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    row = claim_row(probs, _lex(3))
    assert len(row) == len(EVIDENCE_FEATURES) == len(head_feature_names())
    at = dict(zip(EVIDENCE_FEATURES, row, strict=True))
    assert at["max_p_sup"] == pytest.approx(0.9) and at["max_p_ref"] == pytest.approx(0.7)
    assert at["both_sides"] == pytest.approx(0.7)  # min of the two sides' best
    assert at["count_ref_50"] == pytest.approx(np.log1p(1))
    # no evidence: a row of the same width, the evidence part zero
    empty = claim_row(np.zeros((0, 3)), _lex(0), np.ones(len(LEXICAL_FEATURES)))
    assert len(empty) == len(row) and empty[0] == 0.0 and empty[-1] == 1.0
    emb = HashingEmbedder(dim=16)
    vecs = np.asarray(emb.encode(["sea ice melts", "sea ice melts fast", "coins"]), float)
    dense = claim_row(probs[:2], _lex(2), None, vecs[0], vecs[1:])
    assert len(dense) == len(head_feature_names(16)) == len(row) + SIMS + 1 + 16
    sims = dense[len(row): len(row) + SIMS]
    assert sims[0] >= sims[1]  # sorted, best first
    assert sims[0] == pytest.approx(float(vecs[0] @ vecs[1]))


def test_prior_correction_moves_towards_the_rare_class() -> None:
    head = VerdictHead(features=("a",), weights=np.zeros((4, 1)), bias=np.zeros(4),
                       mean=np.zeros(1), scale=np.ones(1),
                       prior=np.array([0.7, 0.1, 0.1, 0.1]), alpha=0.0)
    assert head.probabilities(np.zeros((1, 1)))[0] == pytest.approx([0.25] * 4)
    corrected = VerdictHead(**{**head.__dict__, "alpha": 1.0}).probabilities(np.zeros((1, 1)))
    assert corrected[0, 0] < 0.25 and corrected.sum() == pytest.approx(1.0)


def test_head_fit_and_hyperparameters_by_cv() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(80) % 4
    h = rng.normal(size=(80, 3)) * 0.1
    h[:, 0] += y  # the label is readable from the first feature
    f = _fit(h, y, 1e-3)
    assert (f.probabilities(h).argmax(axis=1) == y).mean() >= 0.95
    fold_of = np.arange(80) % 5
    got = choose_head(h, y, fold_of)
    assert got == choose_head(h, y, fold_of)  # deterministic


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    model, ds, corpus, rep = train_small(tmp_path_factory.mktemp("head"))
    assert rep.cv_verdict_head is not None and len(rep.head_params) == 4
    # every claim is labelled once by a head that never saw it
    assert sum(sum(r.values()) for r in rep.cv_verdict_head.confusion.values()) == 16
    return model, ds, corpus


def test_model_file_keeps_the_head(trained: tuple[Path, Path, Path], tmp_path: Path) -> None:
    path = trained[0]
    m = load_model(path)
    assert m.verdict is not None and m.verdict.embedder == "hashing-32"
    assert m.verdict.weights.shape == (4, len(head_feature_names(32, neighbours=True)))
    assert m.verdict.prior.sum() == pytest.approx(1.0)
    # the neighbour bank: every training claim's vector and label, never its text
    assert m.verdict.bank is not None and m.verdict.bank.shape == (16, 32)
    assert m.verdict.bank_labels is not None
    assert sorted(set(m.verdict.bank_labels.tolist())) <= [0.0, 1.0, 2.0, 3.0]
    m.save(tmp_path / "again.npz")
    again = load_model(tmp_path / "again.npz")
    assert again.verdict is not None
    assert np.array_equal(again.verdict.weights, m.verdict.weights)
    assert again.verdict.alpha == m.verdict.alpha and again.verdict.top == m.verdict.top
    assert again.verdict.k == m.verdict.k and again.verdict.bank is not None
    assert np.array_equal(again.verdict.bank, m.verdict.bank)


def _session(model: Path, claim: str, engine_corpus: Path) -> SessionState:
    engine, _ = open_engine(engine_corpus)
    try:
        head = engine.driver.run(engine.driver.start(
            claim, config={**EVAL_CONFIG, "stance_model": str(model)}).sid)
        assert head.fsm == "DONE"
        return head.state
    finally:
        engine.close()


def test_a_session_is_labelled_by_the_head(trained: tuple[Path, Path, Path]) -> None:
    path, ds, corpus = trained
    claim = json.loads(ds.read_text().splitlines()[1])["claim"]  # a REFUTES-shaped claim
    st = _session(path, claim, corpus)
    v = st.verdict
    assert v is not None and v["label"] in VERDICTS
    assert v["reasons"][0].startswith(f"claim-level model: p({v['label']})=")
    ids = {e["id"] for items in st.evidence.values() for e in items}
    assert set(v["cites"]) <= ids and len(v["cites"]) <= 5
    if v["label"] in ("SUPPORTS", "REFUTES"):
        side = v["label"]
        assert v["cites"] and any(r.startswith(f"evidence: max p({side})=") for r in v["reasons"])
        assert any(r.startswith(f"{v['cites'][0]}: p(SUPPORTS)=") for r in v["reasons"])


def test_an_unavailable_head_embedder_falls_back_to_the_rule(
    trained: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    path, ds, corpus = trained
    m = load_model(path)
    assert m.verdict is not None
    odd = tmp_path / "odd.npz"
    m.__class__(**{**m.__dict__, "verdict": VerdictHead(
        **{**m.verdict.__dict__, "embedder": "no-such"})}).save(odd)
    cached_model.cache_clear()
    st = _session(odd, json.loads(ds.read_text().splitlines()[0])["claim"], corpus)
    assert st.verdict is not None
    assert st.verdict["reasons"][0].startswith("model: ")
    assert "verdict head needs embedder 'no-such'" in st.verdict["reasons"][-1]


def test_aggregate_input_is_unchanged_without_a_model() -> None:
    to_input = DEFAULT_BINDINGS["verdict_aggregate"].to_input
    st = SessionState(sid="s", claim="c", fsm="AGGREGATE", subclaims=[{"id": "s1", "c": "c"}],
                      evidence={"s1": []}, judgments=[])
    assert "claim" not in to_input(st, {"rev": 0})
    withm = st.model_copy(update={"config": {"stance_model": "m.npz"}})
    got = to_input(withm, {"rev": 0})
    assert got["claim"] == "c" and got["evidence"] == {"s1": []}


def test_cli_train_and_eval_with_a_head(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "d.jsonl")
    corpus = write_corpus(ds, tmp_path / "c.jsonl")
    out = tmp_path / "m.npz"
    res = CliRunner().invoke(main, ["train", str(ds), "--corpus", str(corpus), "--folds", "4",
                                    "--out", str(out), "--no-semantic", "--json"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    head = rep["cv_verdict_head"]
    confusion = head["confusion"]
    judged = sum(n for row in confusion.values() for n in row.values())
    right = sum(confusion[label][label] for label in confusion)
    # Every claim judged once across the folds, the accuracy is the confusion's, and the
    # four labels of this separable data are told apart far above chance (0.25).
    assert judged == rep["claims"] == 16 and head["accuracy"] == right / judged
    assert head["accuracy"] >= 0.75 and rep["head"]
    assert load_model(out).verdict is not None and load_model(out).verdict.embedder is None
    no = CliRunner().invoke(main, ["train", str(ds), "--corpus", str(corpus), "--folds", "4",
                                   "--out", str(tmp_path / "n.npz"), "--no-semantic",
                                   "--no-head"], catch_exceptions=False)
    assert no.exit_code == 0 and "claim-level head" not in no.output
    assert load_model(tmp_path / "n.npz").verdict is None
    bad = CliRunner().invoke(main, ["train", str(ds), "--corpus", str(corpus), "--out",
                                    str(tmp_path / "x.npz"), "--head-embedder", "no-such"],
                             catch_exceptions=False)
    assert bad.exit_code != 0 and "error: EMBEDDER_UNAVAILABLE: head-embedder" in bad.output
    data = read_dataset(DATA / "eval_dataset.jsonl")
    engine, _ = open_engine(DATA / "eval_corpus.jsonl")
    try:
        ev = evaluate(engine, data, config={**EVAL_CONFIG, "stance_model": str(out)})
    finally:
        engine.close()
    assert ev.claims == 6 and ev.failed == 0
