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
