"""The learned stance model: features, the file format, thresholds, reasons, and how the
VERIFY / AGGREGATE skills use it (or fall back to the lexical judge)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.eval.data import read_dataset  # noqa: E402
from claimfsm.eval.train.judge import train  # noqa: E402
from claimfsm.skills.context import SkillContext  # noqa: E402
from claimfsm.skills.stance.model import (  # noqa: E402
    Featurizer,
    ModelError,
    StanceModel,
    cached_model,
    dense_features,
    load_model,
)
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES, lexical_features  # noqa: E402
from claimfsm.skills.stance_judge import SKILL as VERIFY  # noqa: E402
from claimfsm.skills.verdict_aggregate import SKILL as AGGREGATE  # noqa: E402
from tests.support.stance_data import write_dataset  # noqa: E402

CLAIM = "The sea ice melt in Arctic has increased sharply since 1990."


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("model")
    data = read_dataset(write_dataset(root / "train.jsonl"))
    train(data, root / "m.npz", folds=4)
    return root / "m.npz"


def feature(claim: str, sentence: str, name: str) -> float:
    return lexical_features(claim, sentence)[LEXICAL_FEATURES.index(name)]


def test_lexical_features_name_the_signals() -> None:
    assert len(lexical_features(CLAIM, "x")) == len(LEXICAL_FEATURES)
    assert feature(CLAIM, "Arctic sea ice melt increased sharply.", "relevance") > 0.8
    assert feature(CLAIM, "The football club signed a striker.", "relevance") == 0.0
    assert feature(CLAIM, "Arctic sea ice melt decreased since 1990.", "direction_clash") == 1
    assert feature(CLAIM, "Arctic sea ice melt increased since 1990.", "direction_agree") == 1
    assert feature(CLAIM, "Arctic sea ice melt has not increased.", "sentence_denies") == 1
    assert feature(CLAIM, "Arctic sea ice melt increased since 1990.", "numbers_agree") == 1


class ToyEmbedder:
    """Two dimensions: does the text mention ice, does it mention football."""

    def encode(self, texts: list[str]) -> Any:
        rows = np.array([[1.0 + ("ice" in t), 1.0 + 3 * ("football" in t)] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_dense_features_follow_the_lexical_ones() -> None:
    pairs = [(CLAIM, "Sea ice melts."), (CLAIM, "football")]
    lex = Featurizer().matrix(pairs)
    both = Featurizer(ToyEmbedder()).matrix(pairs)
    assert lex.shape == (2, len(LEXICAL_FEATURES))
    assert both.shape == (2, len(LEXICAL_FEATURES) + 1 + 2 * 2)
    assert np.array_equal(both[:, : lex.shape[1]], lex)
    cos = both[:, len(LEXICAL_FEATURES)]
    assert cos[0] == pytest.approx(1.0) and cos[1] < 0.9
    u = np.array([[1.0, 0.0]])
    assert dense_features(u, u).tolist() == [[1.0, 1.0, 0.0, 0.0, 0.0]]
    assert len(Featurizer().names(2)) == both.shape[1]


def test_model_file_round_trip_and_thresholds(model_path: Path, tmp_path: Path) -> None:
    model = load_model(model_path)
    assert model.features == LEXICAL_FEATURES and model.embedder is None
    assert model.meta["claims"] == 16
    copy = tmp_path / "copy.npz"
    model.save(copy)
    again = load_model(copy)
    assert np.array_equal(again.weights, model.weights)
    assert (again.support_t, again.refute_t) == (model.support_t, model.refute_t)
    st, rt = model.support_t, model.refute_t
    assert model.label(np.array([st, 0.0, 1 - st]))[0] == "SUPPORTS"
    assert model.label(np.array([0.0, rt, 1 - rt]))[0] == "REFUTES"
    assert model.label(np.array([st - 0.01, rt - 0.01, 0.0]))[0] == "NOT_ENOUGH_INFO"


def test_bad_model_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as missing:
        load_model(tmp_path / "none.npz")
    assert missing.value.code == "MODEL_NOT_FOUND"
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a model")
    with pytest.raises(ModelError) as bad:
        load_model(junk)
    assert bad.value.code == "BAD_MODEL"
    other = tmp_path / "other.npz"
    np.savez(other, head=np.frombuffer(b'{"format": "x"}', dtype=np.uint8))
    with pytest.raises(ModelError, match="not a claimfsm-stance-model"):
        load_model(other)


def test_predictions_and_reasons(model_path: Path) -> None:
    model, feat, reason = cached_model(str(model_path))
    assert feat is not None and reason is None
    pairs = [("The permafrost thaw in Yukon has increased sharply since 1990.", s) for s in (
        "Since 1990 the permafrost thaw in Yukon has increased sharply, records show.",
        "The permafrost thaw in Yukon has not increased; it decreased steadily since 1990.",
        "The museum opened a new gallery of Roman coins last spring.")]
    x = feat.matrix(pairs)
    probs = model.probabilities(x)
    assert probs.sum(axis=1) == pytest.approx([1.0, 1.0, 1.0])
    labels = [model.label(p)[0] for p in probs]
    assert labels == ["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"]
    why = model.explain(x[1], "REFUTES")
    assert why and all(w.split()[0] in LEXICAL_FEATURES for w in why)


def _verify(path: str | None, texts: list[str]) -> dict[str, Any]:
    ev = [{"id": f"d{i}#0", "doc_id": f"d{i}", "text": t, "source": "wiki", "score": 1.0}
          for i, t in enumerate(texts)]
    extra = {"stance_model": path} if path else {}
    env = VERIFY.run({"claims": [{"id": "s1", "c": CLAIM}], "evidence": {"s1": ev},
                      "profile": "calibrated", **extra,
                      "st": {"sid": "t", "rev": 3, "fsm": "VERIFY"}}, SkillContext())
    assert env.s == "ok" and env.d is not None, env.e
    agg = AGGREGATE.run({"claims": [{"id": "s1", "c": CLAIM}], "judgments": env.d["judgments"],
                         "profile": "calibrated", **extra,
                         "st": {"sid": "t", "rev": 4, "fsm": "AGGREGATE"}}, SkillContext())
    assert agg.s == "ok" and agg.d is not None, agg.e
    return {"judgment": env.d["judgments"][0], "verdict": agg.d["verdict"]}


SUP = "Since 1990 the sea ice melt in Arctic has increased sharply, records show."
REF = "The sea ice melt in Arctic has not increased; it decreased steadily since 1990."


def test_skills_judge_with_the_model(model_path: Path) -> None:
    out = _verify(str(model_path), [SUP, "The football club signed a young striker."])
    j = out["judgment"]
    assert j["verdict"] == "SUPPORTS" and j["cites"] == ["d0#0"]
    assert j["reasons"][0].startswith("model: 2 sentences")
    assert j["reasons"][1].startswith("d0#0: p(SUPPORTS)=")
    assert out["verdict"]["label"] == "SUPPORTS"
    both = _verify(str(model_path), [SUP, REF])
    assert both["judgment"]["verdict"] == "NOT_ENOUGH_INFO"
    assert both["verdict"]["label"] == "DISPUTED"
    assert _verify(str(model_path), [REF])["verdict"]["label"] == "REFUTES"


def test_missing_model_is_an_error_envelope(tmp_path: Path) -> None:
    env = VERIFY.run({"claims": [{"id": "s1", "c": CLAIM}], "evidence": {},
                      "stance_model": str(tmp_path / "gone.npz"),
                      "st": {"sid": "t", "rev": 3, "fsm": "VERIFY"}}, SkillContext())
    assert env.s == "error" and env.e is not None
    assert env.e.code == "MODEL_UNAVAILABLE" and "stance_model" in env.e.msg


def test_a_skill_input_does_not_tell_which_files_exist(tmp_path: Path) -> None:
    present = tmp_path / "present.npz"
    present.write_bytes(b"not a model")
    answers = []
    for path in (tmp_path / "absent.npz", present, tmp_path):
        env = VERIFY.run({"claims": [{"id": "s1", "c": CLAIM}], "evidence": {},
                          "stance_model": str(path),
                          "st": {"sid": "t", "rev": 3, "fsm": "VERIFY"}}, SkillContext())
        assert env.e is not None
        answers.append((env.e.code, env.e.msg))
    assert len(set(answers)) == 1


def test_unavailable_embedder_falls_back_to_the_lexical_judge(
    model_path: Path, tmp_path: Path
) -> None:
    model = load_model(model_path)
    odd = StanceModel(**{**model.__dict__, "embedder": "no-such-embedder"})
    path = tmp_path / "needs_embedder.npz"
    odd.save(path)
    out = _verify(str(path), [SUP])
    lexical = _verify(None, [SUP])
    note = "needs embedder 'no-such-embedder'"
    assert note in out["judgment"]["reasons"][-1]
    assert out["judgment"]["reasons"][:-1] == lexical["judgment"]["reasons"]
    assert out["verdict"]["label"] == lexical["verdict"]["label"]
    assert note in out["verdict"]["reasons"][-1]
