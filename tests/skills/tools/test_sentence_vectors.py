"""Sentence vectors by content hash: computed once per sentence, stored with the index,
cached by ``eval`` in a file, and handed to the embedder so sessions never re-encode."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.eval.embed import attach_vectors
from claimfsm.skills.embed import HashingEmbedder, text_key
from claimfsm.skills.tools.index import Document, EvidenceIndex
from claimfsm.skills.tools.ingest import ingest_corpus
from tests.support.components import need_semantic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "eval_corpus.jsonl"


class Remembering:
    """A hashing embedder with the content-hash memory of ``MiniLMEmbedder``."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.encoded: list[str] = []
        self.rows: dict[bytes, Any] = {}

    def encode(self, texts: Sequence[str]) -> Any:
        todo = [t for t in texts if text_key(t) not in self.rows]
        self.encoded.extend(todo)
        if todo:
            for t, row in zip(todo, self.inner.encode(todo), strict=True):
                self.rows[text_key(t)] = row
        return np.stack([self.rows[text_key(t)] for t in texts])

    def remember(self, keys: Sequence[bytes], mat: Any) -> None:
        self.rows.update(zip(keys, mat, strict=True))


def test_each_sentence_is_encoded_once_and_shared_by_documents(tmp_path: Path) -> None:
    emb = HashingEmbedder(32)
    with EvidenceIndex.open(tmp_path / "s.db") as index:
        index.add_documents([
            Document(doc_id="a", title="A", text="Ice melts. Seas rise."),
            Document(doc_id="b", title="B", text="Seas rise. Storms grow."),
        ])
        index.use_embedder(emb)
        assert sorted(index.sentences.missing(emb.name)) == ["Ice melts.", "Seas rise.",
                                                             "Storms grow."]
        assert index.embed_sentences() == 3 and index.embed_sentences() == 0
        keys, mat = index.sentences.export(emb.name)
        want = dict(zip(keys, mat, strict=True))
        assert np.array_equal(want[text_key("Storms grow.")], emb.encode(["Storms grow."])[0])


def test_an_engine_hands_stored_sentences_to_the_embedder(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    first = Remembering()
    with EvidenceIndex.open(db) as index:
        ingest_corpus(index, CORPUS)
        index.use_embedder(first, fill=True)
        n = index.sentences.count(first.name)
        assert n > 0
    fresh = Remembering()
    config = EngineConfig(profile=Profile(retrieval="hybrid"), embedder=fresh)
    with Engine.open(db, config=config) as engine:
        assert len(fresh.rows) == n and fresh.encoded == []
        texts = [d.text for d in map(engine.index.get_document, ["Glacier:0"]) if d]
        fresh.encode(texts)
        assert fresh.encoded == []  # answered from the stored rows


def test_eval_caches_sentence_vectors_in_a_file(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        emb = Remembering()
        index = EvidenceIndex.open(":memory:")
        ingest_corpus(index, CORPUS)
        attach_vectors(index, emb, CORPUS, cache_dir=tmp_path)
        # Rows read from the file are committed: a transaction left open would send every
        # later search to FTS5's bm25() instead of the index's postings.
        assert not index.conn.in_transaction
        assert index.search("glacier", dense=False)
        assert not index.conn.in_transaction
        runs.append((emb, index.sentences.export(emb.name)))
        index.close()
    (first, (k1, m1)), (second, (k2, m2)) = runs
    assert first.encoded and second.encoded == []  # the second run read both caches
    assert k1 == k2 and np.array_equal(m1, m2) and len(second.rows) == len(k1)


def test_minilm_encodes_each_text_once() -> None:
    from claimfsm.skills.embed import load_embedder

    need_semantic()
    emb = load_embedder("minilm")
    assert emb is not None
    seen: list[str] = []
    real = emb._encode  # type: ignore[attr-defined]

    def counting(texts: Sequence[str]) -> Any:
        seen.extend(texts)
        return real(texts)

    emb._encode = counting  # type: ignore[attr-defined]
    try:
        a = emb.encode(["Ice melts fast.", "Seas rise slowly.", "Ice melts fast."])
        b = emb.encode(["Seas rise slowly.", "A new one."])
    finally:
        del emb._encode  # type: ignore[attr-defined]
    assert seen == ["Ice melts fast.", "Seas rise slowly.", "A new one."]
    assert np.array_equal(a[0], a[2]) and np.array_equal(a[1], b[0])
    assert a.dtype == np.float32 and a.shape == (3, 384)
