"""The datasets of ``eval`` and ``train`` are bounded and checked before anything runs,
``train`` refuses data it cannot learn from, and no model with a NaN is written or
loaded. Each limit is tested at the limit and one past it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.eval import data as data_mod
from claimfsm.eval.data import DatasetError, read_dataset
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_EVIDENCE_PER_CLAIM, MAX_SENTENCE_CHARS
from tests.support.components import missing

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "eval_corpus.jsonl"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def numpy() -> Any:
    try:
        import numpy as np
    except ImportError:
        missing("numpy", "numpy is not installed (pip install -e '.[dev]')")
    return np


def _claim(cid: str, text: str = "Mountain glaciers have retreated since 1900.",
           evidences: list[dict[str, Any]] | None = None, label: str = "SUPPORTS",
           ) -> bytes:
    evs = [{"evidence_id": "Glacier:0", "evidence_label": "SUPPORTS",
            "evidence": "Most mountain glaciers have retreated since 1900."}] \
        if evidences is None else evidences
    return orjson.dumps({"claim_id": cid, "claim": text, "claim_label": label,
                         "evidences": evs}) + b"\n"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
@pytest.mark.parametrize("command", ["eval", "train"])
def test_dev_zero_is_a_code_not_a_memory_error(command: str, tmp_path: Path) -> None:
    extra = ["--corpus", str(CORPUS)] if command == "eval" else ["--out",
                                                                  str(tmp_path / "m.npz")]
    res = cli(command, "/dev/zero", *extra, "--json")
    assert res.exit_code == 2
    error = orjson.loads(res.stdout)["error"]
    assert error["code"] == "INPUT_TOO_LARGE"
    assert f"line 1: more than {data_mod.MAX_DATASET_LINE_BYTES} bytes" in error["msg"]


def test_a_claim_at_the_length_limit_is_read_and_one_longer_names_its_line(
        tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(_claim("1") + _claim("2", "x" * MAX_CLAIM_CHARS))
    assert len(read_dataset(path).claims) == 2
    path.write_bytes(_claim("1") + _claim("2", "x" * (MAX_CLAIM_CHARS + 1)))
    with pytest.raises(DatasetError) as exc:
        read_dataset(path)
    assert exc.value.code == "INPUT_TOO_LARGE"
    assert exc.value.msg == (f"line 2: field 'claim': {MAX_CLAIM_CHARS + 1} characters, the "
                             f"limit is {MAX_CLAIM_CHARS}")


def test_eval_on_a_claim_over_the_limit_is_a_code_not_internal(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(_claim("1") + _claim("2", "word " * 300))
    res = cli("eval", str(path), "--corpus", str(CORPUS), "--json")
    assert res.exit_code == 2  # was: INTERNAL: InputTooLarge, after the first claims ran
    error = orjson.loads(res.stdout)["error"]
    assert error["code"] == "INPUT_TOO_LARGE" and error["msg"].startswith("line 2: field 'claim'")


def test_evidence_sentences_are_bounded_in_number_and_length(tmp_path: Path) -> None:
    def ev(i: int, text: str = "Glaciers retreat.") -> dict[str, str]:
        return {"evidence_id": f"G:{i}", "evidence_label": "SUPPORTS", "evidence": text}

    path = tmp_path / "d.jsonl"
    path.write_bytes(_claim("1", evidences=[ev(i) for i in range(MAX_EVIDENCE_PER_CLAIM)])
                     + _claim("2", evidences=[ev(0, "x" * MAX_SENTENCE_CHARS)]))
    assert len(read_dataset(path).gold[0].evidences) == MAX_EVIDENCE_PER_CLAIM
    path.write_bytes(_claim("1", evidences=[ev(i) for i in range(MAX_EVIDENCE_PER_CLAIM + 1)]))
    with pytest.raises(DatasetError, match=f"line 1: field 'evidences': "
                                           f"{MAX_EVIDENCE_PER_CLAIM + 1} sentences"):
        read_dataset(path)
    too_long = ev(0, "x" * (MAX_SENTENCE_CHARS + 1))
    path.write_bytes(_claim("1") + _claim("2", evidences=[too_long]))
    with pytest.raises(DatasetError, match=r"line 2: field 'evidences\.0\.evidence': "):
        read_dataset(path)


def test_the_claims_and_the_bytes_of_a_dataset_are_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"".join(_claim(str(i)) for i in range(3)))
    monkeypatch.setattr(data_mod, "MAX_DATASET_CLAIMS", 3)
    assert len(read_dataset(path).claims) == 3
    path.write_bytes(b"".join(_claim(str(i)) for i in range(4)))
    with pytest.raises(DatasetError, match=r"more than 3 claims \(line 4\); use --limit"):
        read_dataset(path)
    assert len(read_dataset(path, limit=3).claims) == 3
    size = len(path.read_bytes())
    monkeypatch.setattr(data_mod, "MAX_DATASET_BYTES", size - 1)
    with pytest.raises(DatasetError, match=f"{size} bytes, the limit is {size - 1}"):
        read_dataset(path)


def _dataset(path: Path, rows: list[bytes]) -> Path:
    path.write_bytes(b"".join(rows))
    return path


@pytest.mark.parametrize("case", ["no pairs", "one label", "one fold"])
def test_train_refuses_data_it_cannot_learn_from(case: str, tmp_path: Path) -> None:
    numpy()
    sup = {"evidence_id": "G:0", "evidence_label": "SUPPORTS", "evidence": "It rose."}
    ref = {"evidence_id": "G:1", "evidence_label": "REFUTES", "evidence": "It fell."}
    rows = {"no pairs": [_claim(str(i), evidences=[]) for i in range(6)],
            "one label": [_claim(str(i), evidences=[sup]) for i in range(6)],
            # Only claim 0 has sentences: the fold holding it trains on nothing.
            "one fold": [_claim("0", evidences=[sup, ref])]
            + [_claim(str(i), evidences=[]) for i in range(1, 6)]}[case]
    out = tmp_path / "m.npz"
    res = cli("train", str(_dataset(tmp_path / "d.jsonl", rows)), "--out", str(out), "--json")
    assert res.exit_code == 2, res.output  # was: exit 0 and a model of NaNs
    error = orjson.loads(res.stdout)["error"]
    assert error["code"] == "NOTHING_TO_LEARN"
    assert {"no pairs": "no (claim, sentence) pairs", "one label": "every (claim, sentence) "
            "pair is SUPPORTS", "one fold": "every pair belongs to claims of fold"}[case] \
        in error["msg"]
    assert not out.exists()


def _model(path: Path, **change: Any) -> Path:
    """A small model file of the current format, with ``change`` applied to its arrays
    (or to its header's fields, prefixed ``head_``)."""
    np = numpy()
    from claimfsm.skills.stance.lexical import LABELS
    from claimfsm.skills.stance.model import FORMAT
    from claimfsm.skills.stance.model_features import LEXICAL_FEATURES

    k, d = len(LABELS), len(LEXICAL_FEATURES)
    head = {"format": FORMAT, "features": list(LEXICAL_FEATURES), "labels": list(LABELS),
            "support_t": 0.5, "refute_t": 0.5, "embedder": None, "top": 5, "meta": {}}
    head.update({k[5:]: v for k, v in change.items() if k.startswith("head_")})
    arrays = {"weights": np.zeros((k, d)), "bias": np.zeros(k), "mean": np.zeros(d),
              "scale": np.ones(d)}
    arrays.update({k: v for k, v in change.items() if not k.startswith("head_")})
    blob = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, head=blob, **arrays)
    return path


def test_a_model_with_a_nan_is_neither_written_nor_loaded(tmp_path: Path) -> None:
    np = numpy()
    from claimfsm.skills.stance.model import ModelError, StanceModel, load_model

    good = load_model(_model(tmp_path / "good.npz"))
    bad_weights = good.weights.copy()
    bad_weights[1, 2] = np.nan
    bad = StanceModel(**{**good.__dict__, "weights": bad_weights})
    with pytest.raises(ModelError, match="weights holds NaN or infinity"):
        bad.save(tmp_path / "nan.npz")
    assert not (tmp_path / "nan.npz").exists()
    with pytest.raises(ModelError, match="scale holds NaN or infinity"):
        load_model(_model(tmp_path / "inf.npz", scale=np.full(len(good.features), np.inf)))
    # json reads NaN in a header unless told not to: a threshold of NaN is refused too.
    with pytest.raises(ModelError, match="NaN"):
        load_model(_model(tmp_path / "t.npz", head_support_t=float("nan")))


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated", b"\x93NUMPY not a zip"])
def test_an_empty_or_damaged_model_file_is_bad_model(tmp_path: Path, content: bytes) -> None:
    numpy()
    from claimfsm.skills.stance.model import ModelError, load_model

    path = tmp_path / "m.npz"
    path.write_bytes(content)
    with pytest.raises(ModelError) as exc:
        load_model(path)  # was: EOFError for the empty file
    assert exc.value.code == "BAD_MODEL"
    res = cli("verify", "Water boils at 100 degrees.", "--db", str(tmp_path / "v.db"),
              "--stance-model", str(path))
    assert res.exit_code == 2 and "error: MODEL_UNAVAILABLE: " in res.output
    assert "INTERNAL" not in res.output


def test_a_model_that_unpacks_past_the_limit_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np = numpy()
    from claimfsm.skills.stance import model as model_mod

    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, head=np.zeros(1, dtype=np.uint8), junk=np.zeros(2_000_000))
    assert path.stat().st_size < 100_000  # 16 MB of zeros, compressed
    monkeypatch.setattr(model_mod, "MAX_MODEL_BYTES", 1_000_000)
    with pytest.raises(model_mod.ModelError, match=r"unpacks to 160[0-9]{5} bytes, the limit"):
        model_mod.load_model(path)
    monkeypatch.setattr(model_mod, "MAX_MODEL_BYTES", path.stat().st_size - 1)
    with pytest.raises(model_mod.ModelError, match=f"{path.stat().st_size} bytes, the limit"):
        model_mod.load_model(path)
