"""Dense vectors for an evaluation corpus, cached between runs.

Encoding the Climate-FEVER corpus with MiniLM takes about 40 s on two cores, so the
vectors are kept in ``CACHE_DIR/<model>-<sha256 of the corpus file>.npz`` (ids and
matrix) and reused while neither the corpus nor the model changes. The cache is a
convenience: a missing, unreadable or mismatched file is simply recomputed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from claimfsm.skills.tools.index import EvidenceIndex

if TYPE_CHECKING:
    from claimfsm.skills.embed import Embedder

__all__ = ["CACHE_DIR", "attach_vectors", "cache_path"]

CACHE_DIR = Path(".cache") / "claimfsm"
"""Relative to the working directory; git-ignored."""


def cache_path(corpus: str | Path, model: str, cache_dir: Path = CACHE_DIR) -> Path:
    """Where the vectors of ``corpus`` under ``model`` are cached."""
    digest = hashlib.sha256()
    with open(corpus, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return cache_dir / f"{model}-{digest.hexdigest()[:20]}.npz"


def attach_vectors(
    index: EvidenceIndex, embedder: Embedder, corpus: str | Path, *,
    cache_dir: Path | None = CACHE_DIR,
) -> tuple[int, bool]:
    """Give every document of ``index`` a vector from ``embedder`` and every sentence its
    own (from the cache when it matches, else computed and cached), rank with them from
    now on and hand the sentence vectors to the embedder. Returns ``(vectors,
    from_cache)`` for the documents."""
    out = _attach_documents(index, embedder, corpus, cache_dir=cache_dir)
    _attach_sentences(index, embedder, corpus, cache_dir=cache_dir)
    index.warm()
    return out


def _attach_sentences(index: EvidenceIndex, embedder: Embedder, corpus: str | Path, *,
                      cache_dir: Path | None) -> None:
    import numpy as np

    path = (cache_path(corpus, f"{embedder.name}-sentences", cache_dir)
            if cache_dir is not None else None)
    if path is not None and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = [row.tobytes() for row in data["keys"]]
                mat = data["mat"].astype(np.float32)
            if mat.shape == (len(keys), embedder.dim):
                index.add_sentence_vectors(embedder.name, keys, mat)
        except (OSError, ValueError, KeyError):
            pass  # a stale or broken cache file: recompute below
    if index.embed_sentences() and path is not None:
        keys, mat = index.sentences.export(embedder.name)
        # Keys as a uint8 matrix: a bytes array would drop trailing zero bytes.
        packed = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), -1)
        _save(path, keys=packed, mat=mat)


def _save(path: Path, **arrays: object) -> None:
    import numpy as np

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)  # type: ignore[arg-type]
        tmp.replace(path)
    except OSError:
        pass  # caching is optional


def _attach_documents(
    index: EvidenceIndex, embedder: Embedder, corpus: str | Path, *,
    cache_dir: Path | None,
) -> tuple[int, bool]:
    import numpy as np

    index.use_embedder(embedder)
    path = cache_path(corpus, embedder.name, cache_dir) if cache_dir is not None else None
    if path is not None and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                ids = [str(x) for x in data["ids"]]
                mat = data["mat"].astype(np.float32)
            if mat.shape == (len(ids), embedder.dim):
                known = {d for d, _, _ in index.dense.missing()}
                if known and known <= set(ids):
                    row = {d: i for i, d in enumerate(ids)}
                    want = sorted(known)
                    index.add_vectors(want, mat[[row[d] for d in want]])
                    return len(want), True
        except (OSError, ValueError, KeyError):
            pass  # a stale or broken cache file: recompute below
    index.use_embedder(embedder)
    added = index.embed_missing()
    if path is not None:
        ids, mat = index.dense.export()
        _save(path, ids=np.array(ids), mat=mat)
    return added, False
