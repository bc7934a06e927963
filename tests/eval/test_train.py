"""``claimfsm train``: the logistic regression, the verdict rule and its thresholds,
cross-validation by claim, the model file, the CLI, and a session judged by the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.cli.main import main  # noqa: E402
from claimfsm.engine.runtime import Engine  # noqa: E402
from claimfsm.eval.data import read_dataset  # noqa: E402
from claimfsm.eval.run import EVAL_CONFIG, evaluate, open_engine  # noqa: E402
from claimfsm.eval.train.judge import (  # noqa: E402
    choose_thresholds,
    claim_verdicts,
    collect_pairs,
    fit,
    train,
)
from claimfsm.eval.train.retrieved import DEPTH, TOPS, retrieve_for_training  # noqa: E402
from claimfsm.skills.stance.model import load_model  # noqa: E402
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES  # noqa: E402
from tests.support.stance_data import write_corpus, write_dataset  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["train", *args], catch_exceptions=False)


def test_fit_learns_a_separable_problem() -> None:
    x = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.2], [0.0, 5.0], [0.2, 5.1]])
    y = np.array([2, 2, 0, 0, 1, 1])
    f = fit(x, y, l2=1e-4, iters=300)
    assert f.probabilities(x).argmax(axis=1).tolist() == y.tolist()
    assert np.array_equal(fit(x, y, l2=1e-4, iters=300).weights, f.weights)  # deterministic


def test_claim_rule_and_thresholds() -> None:
    # claim 0: one clear support; 1: one clear refutation; 2: both; 3: nothing clear
    p = np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8], [0.1, 0.8, 0.1], [0.7, 0.1, 0.2],
                  [0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])
    group = np.array([0, 0, 1, 2, 2, 3])
    assert claim_verdicts(p, group, 4, 0.5, 0.5) == [
        "SUPPORTS", "REFUTES", "DISPUTED", "NOT_ENOUGH_INFO"]
    # with a support threshold above 0.8 nothing supports
    assert claim_verdicts(p, group, 4, 0.85, 0.5)[0] == "NOT_ENOUGH_INFO"
    gold = ["SUPPORTS", "REFUTES", "DISPUTED", "NOT_ENOUGH_INFO"]
    st, rt = choose_thresholds(p, group, gold)
    assert claim_verdicts(p, group, 4, st, rt) == gold


def test_pairs_come_from_every_annotated_sentence(tmp_path: Path) -> None:
    data = read_dataset(write_dataset(tmp_path / "d.jsonl", 4))
    pairs = collect_pairs(data)
    assert len(pairs.y) == sum(len(g.evidences) for g in data.gold)
    assert pairs.group.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3]
    assert pairs.claim_labels == ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")


def test_train_cross_validates_by_claim_and_is_deterministic(tmp_path: Path) -> None:
    data = read_dataset(write_dataset(tmp_path / "d.jsonl"))
    rep = train(data, tmp_path / "a.npz", folds=4)
    assert (rep.claims, rep.pairs, rep.folds) == (16, 48, 4)
    assert len(rep.fold_thresholds) == 4
    # the held-out claims are about other places: the model generalises on this easy data
    assert rep.cv_stance.accuracy >= 0.9
    assert rep.cv_verdict.accuracy >= 0.75
    train(data, tmp_path / "b.npz", folds=4)
    a, b = load_model(tmp_path / "a.npz"), load_model(tmp_path / "b.npz")
    assert np.array_equal(a.weights, b.weights) and a.meta == b.meta
    assert a.meta["cv_verdict"]["accuracy"] == rep.cv_verdict.accuracy


def test_cli_train_json_and_text(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "d.jsonl")
    out = tmp_path / "m.npz"
    res = cli(str(ds), "--out", str(out), "--folds", "4", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["claims"] == 16 and doc["folds"] == 4 and doc["embedder"] is None
    assert set(doc["cv_verdict"]) == {"accuracy", "macro_f1", "per_class", "precision",
                                      "recall", "confusion"}
    assert out.is_file()
    text = cli(str(ds), "--out", str(out), "--folds", "3")
    assert text.exit_code == 0 and "3-fold cross-validation by claim, grouped" in text.output
    # the alignment features are in the model, and the report gives their weights
    assert set(doc["alignment"]) == {n for n in LEXICAL_FEATURES if n.startswith("align_")}
    assert all(len(w) == 3 for w in doc["alignment"].values())
    assert "alignment features, weight for SUPPORTS" in text.output


def test_thresholds_on_the_engines_retrieved_evidence(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "d.jsonl")
    corpus = write_corpus(ds, tmp_path / "c.jsonl")
    data = read_dataset(ds)
    got = retrieve_for_training(data, corpus)
    assert set(got.group.tolist()) <= set(range(16)) and len(got.pairs) > 16
    # every sentence EXTRACT keeps (the reranker may lift one from further down), with
    # its rank value and coverage
    assert got.rank.max() < DEPTH and len(got.value) == len(got.coverage) == len(got.pairs)
    rep = train(data, tmp_path / "m.npz", folds=4, retrieved=got)
    assert rep.cv_verdict_retrieved is not None and rep.top in TOPS
    # every claim is scored once, held out (a claim with no evidence counts as NEI)
    assert sum(sum(r.values()) for r in rep.cv_verdict_retrieved.confusion.values()) == 16
    assert load_model(tmp_path / "m.npz").top == rep.top
    res = cli(str(ds), "--corpus", str(corpus), "--folds", "4", "--out",
              str(tmp_path / "n.npz"))
    assert res.exit_code == 0, res.output
    assert "verdict (engine's retrieved evidence)" in res.output


@pytest.mark.parametrize(("args", "code"), [
    (["{ds}", "--corpus", "missing.jsonl"], "NOT_FOUND"),
    (["missing.jsonl"], "NOT_FOUND"),
    (["{ds}", "--folds", "20"], "TOO_FEW_CLAIMS"),
    (["{ds}", "--embedder", "no-such"], "EMBEDDER_UNAVAILABLE"),
])
def test_cli_train_errors(tmp_path: Path, args: list[str], code: str) -> None:
    ds = write_dataset(tmp_path / "d.jsonl")
    argv = [a.replace("{ds}", str(ds)) for a in args]
    res = cli(*argv, "--out", str(tmp_path / "m.npz"))
    assert res.exit_code != 0
    assert f"error: {code}:" in res.output
    assert not (tmp_path / "m.npz").exists()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("train")
    train(read_dataset(write_dataset(root / "d.jsonl")), root / "m.npz", folds=4)
    return root / "m.npz"


def test_a_session_is_judged_by_the_model(model: Path) -> None:
    engine = Engine.open(None)
    try:
        sid = engine.driver.start("NASA landed on the Moon in 1969.",
                                  config={"stance_model": str(model)}).sid
        head = engine.driver.run(sid)
        assert head.fsm == "DONE"
        reasons = head.state.verdict["reasons"]
        assert reasons[0].startswith("model: ")
        assert any("model: " in r for j in head.state.judgments for r in j["reasons"])
    finally:
        engine.close()


def test_eval_with_a_stance_model(model: Path) -> None:
    data = read_dataset(DATA / "eval_dataset.jsonl")
    engine, _ = open_engine(DATA / "eval_corpus.jsonl")
    try:
        rep = evaluate(engine, data, config={**EVAL_CONFIG, "stance_model": str(model)})
    finally:
        engine.close()
    assert rep.claims == 6 and rep.failed == 0
    res = CliRunner().invoke(main, [
        "eval", str(DATA / "eval_dataset.jsonl"), "--corpus", str(DATA / "eval_corpus.jsonl"),
        "--stance-model", str(model), "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["verdict"] == rep.to_json()["verdict"]
    bad = CliRunner().invoke(main, [
        "eval", str(DATA / "eval_dataset.jsonl"), "--corpus", str(DATA / "eval_corpus.jsonl"),
        "--stance-model", str(model.parent / "gone.npz")], catch_exceptions=False)
    assert bad.exit_code != 0 and "error: MODEL_NOT_FOUND:" in bad.output
