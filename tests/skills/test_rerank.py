"""The learned evidence reranker: its features, its training (cross-validated by claim,
written into the model file), and EXTRACT re-ordering a learned session's evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.cli.main import main  # noqa: E402
from claimfsm.eval.data import read_dataset  # noqa: E402
from claimfsm.eval.run import EVAL_CONFIG, open_engine  # noqa: E402
from claimfsm.eval.seen import seen_claims  # noqa: E402
from claimfsm.skills.stance.model import cached_model, load_model  # noqa: E402
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES  # noqa: E402
from claimfsm.skills.stance.rerank import RERANK_FEATURES, history_rows, rerank_row  # noqa: E402
from tests.support.stance_data import train_small  # noqa: E402


def test_history_counts_other_claims_only() -> None:
    bank = np.eye(3)
    history = {"A:1": [(0, True), (1, False)], "B:2": [(2, True)]}
    rows = history_rows(["A:1", "B:2", "C:3"], np.array([1.0, 0.0, 0.0]), history, bank,
                        exclude=2)
    assert rows[0, 1] == pytest.approx(np.log1p(2)) and rows[0, 2] == pytest.approx(np.log1p(1))
    assert rows[0, 3] == pytest.approx(1.0) and rows[0, 4] == 0.0  # decisive for claim 0
    assert not rows[1, 1:].any()  # B:2's only history is the excluded claim itself
    assert rows[2, 0] == rows[1, 0] == pytest.approx(0.3)  # never annotated: the prior
    lexical = [0.0] * len(LEXICAL_FEATURES)
    assert len(rerank_row(3, 0.5, 0.7, 1, rows[0], 0.2, lexical)) == len(RERANK_FEATURES)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    model, ds, corpus, rep = train_small(tmp_path_factory.mktemp("rerank"))
    assert rep.cv_rerank is not None
    before, after = rep.cv_rerank
    assert before.claims == after.claims > 0
    return model, ds, corpus


def test_the_model_file_keeps_the_reranker(trained: tuple[Path, Path, Path],
                                           tmp_path: Path) -> None:
    m = load_model(trained[0])
    assert m.reranker is not None and m.verdict is not None and m.verdict.bank is not None
    r = m.reranker
    assert r.weights.shape == (len(RERANK_FEATURES),)
    # history: every training claim's annotated sentences, bank rows within the bank
    gold = read_dataset(trained[1]).gold
    assert len(r.history_ids) == sum(len(g.evidences) for g in gold)
    assert int(r.history_bank.min()) >= 0 and int(r.history_bank.max()) < len(m.verdict.bank)
    # The history mapping is built once per model and cannot be edited by a caller.
    history = r.history()
    assert history is r.history() and sum(map(len, history.values())) == len(r.history_ids)
    assert all((int(b), bool(d)) in history[doc] for doc, b, d in
               zip(r.history_ids, r.history_bank, r.history_decisive, strict=True))
    with pytest.raises(TypeError):
        history["new"] = ()  # type: ignore[index]
    m.save(tmp_path / "again.npz")
    again = load_model(tmp_path / "again.npz").reranker
    assert again is not None and again.history_ids == r.history_ids
    assert np.array_equal(again.weights, r.weights) and again.bias == r.bias


def _evidence(corpus: Path, claim: str, model: Path | None) -> dict[str, list[dict[str, object]]]:
    engine, _ = open_engine(corpus)
    extra = {} if model is None else {"stance_model": str(model)}
    try:
        head = engine.driver.run(engine.driver.start(claim, config={**EVAL_CONFIG,
                                                                    **extra}).sid)
        return dict(head.state.evidence)
    finally:
        engine.close()


def test_a_learned_session_reads_evidence_in_the_reranker_order(
    trained: tuple[Path, Path, Path],
) -> None:
    path, ds, corpus = trained
    claim = read_dataset(ds).claims[2].claim
    cached_model.cache_clear()
    plain = _evidence(corpus, claim, None)
    learned = _evidence(corpus, claim, path)
    assert learned == _evidence(corpus, claim, path)  # deterministic
    for sid, items in learned.items():
        ranks = [float(str(it["rank"])) for it in items]
        assert ranks == sorted(ranks, reverse=True) and all(0.0 <= r <= 1.0 for r in ranks)
        # the same sentences as the engine's own list, possibly in another order
        assert sorted(str(it["id"]) for it in items) == sorted(str(it["id"])
                                                               for it in plain[sid])


def test_a_model_without_a_reranker_leaves_the_order(
    trained: tuple[Path, Path, Path], tmp_path: Path,
) -> None:
    path, ds, corpus = trained
    m = load_model(path)
    bare = tmp_path / "bare.npz"
    m.__class__(**{**m.__dict__, "reranker": None}).save(bare)
    cached_model.cache_clear()
    claim = read_dataset(ds).claims[1].claim
    assert _evidence(corpus, claim, bare) == _evidence(corpus, claim, None)


def test_eval_warns_when_the_model_was_trained_on_the_claims(
    trained: tuple[Path, Path, Path],
) -> None:
    path, ds, corpus = trained
    cached_model.cache_clear()
    claims = [c.claim for c in read_dataset(ds).claims]
    assert seen_claims(str(path), claims) == len(claims)
    assert seen_claims(str(path), ["Penguins live mostly in the Southern Hemisphere."]) == 0
    res = CliRunner().invoke(main, ["eval", str(ds), "--corpus", str(corpus),
                                    "--stance-model", str(path), "--limit", "3"])
    assert res.exit_code == 0, res.output
    assert "warning: 3 of the 3 claims are in the model's training data" in res.output
