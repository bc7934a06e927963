"""Sentence embeddings kept by content hash, so a session never encodes a corpus sentence.

The learned judge's verdict head compares the claim with each evidence sentence in
embedding space; those sentences come from the corpus, so their vectors are computed once,
at ingest (or when ``eval`` prepares its index), and stored in ``ev_text_vectors(key,
model, vec)``: ``key`` is :func:`claimfsm.skills.embed.text_key` of the sentence text, shared by
every document that contains the same sentence. An engine that ranks with an embedder
hands these rows to it (``remember``), and the embedder answers them from memory.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.skills.embed import text_key
from claimfsm.skills.tools.sentences import split_sentences

if TYPE_CHECKING:
    from claimfsm.skills.embed import Embedder

__all__ = ["SENTENCE_SCHEMA", "SentenceVectors"]

SENTENCE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS ev_text_vectors (
        key BLOB NOT NULL,
        model TEXT NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (key, model))""",
)


class SentenceVectors:
    """The stored sentence vectors of one index."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock

    def count(self, model: str) -> int:
        """How many sentence vectors ``model`` has here."""
        with self._lock:
            row = self._conn.execute("SELECT count(*) FROM ev_text_vectors WHERE model = ?",
                                     (model,)).fetchone()
        return int(row[0])

    def missing(self, model: str) -> list[str]:
        """Sentences of the indexed documents (``doc_id`` order, each once) that have no
        vector for ``model``."""
        with self._lock:
            texts = [str(r[0]) for r in self._conn.execute(
                "SELECT text FROM ev_docs ORDER BY doc_id")]
            have = {bytes(r[0]) for r in self._conn.execute(
                "SELECT key FROM ev_text_vectors WHERE model = ?", (model,))}
        out: dict[bytes, str] = {}
        for text in texts:
            for sentence in split_sentences(text):
                key = text_key(sentence)
                if key not in have and key not in out:
                    out[key] = sentence
        return list(out.values())

    def store(self, model: str, texts: Sequence[str], mat: Any) -> int:
        """Write one row of ``mat`` per text (the caller owns the transaction)."""
        rows = [(text_key(t), model, mat[i].astype("<f4").tobytes())
                for i, t in enumerate(texts)]
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO ev_text_vectors(key, model, vec) VALUES (?, ?, ?)",
                rows)
        return len(rows)

    def fill(self, embedder: Embedder, *, batch: int = 256,
             commit: Callable[[Callable[[], int]], int] | None = None,
             on_batch: Callable[[int, int], None] | None = None) -> int:
        """Encode and store every missing sentence, ``batch`` at a time (``commit`` runs
        each batch's write in a transaction). Returns how many were added."""
        todo = self.missing(embedder.name)
        done = 0
        for start in range(0, len(todo), max(1, batch)):
            part = todo[start : start + batch]
            mat = embedder.encode(part)

            def write(part: Sequence[str] = part, mat: Any = mat) -> int:
                return self.store(embedder.name, part, mat)

            done += commit(write) if commit is not None else write()
            if on_batch is not None:
                on_batch(done, len(todo))
        return done

    def warm(self, embedder: Embedder, *, limit: int) -> int:
        """Hand up to ``limit`` stored rows of ``embedder``'s model to it (``remember``),
        so it never encodes those sentences again. Returns how many."""
        remember = getattr(embedder, "remember", None)
        if remember is None or limit <= 0:
            return 0
        import numpy as np

        with self._lock:
            rows = self._conn.execute(
                "SELECT key, vec FROM ev_text_vectors WHERE model = ? LIMIT ?",
                (embedder.name, limit)).fetchall()
        if not rows:
            return 0
        mat = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
        remember([bytes(r[0]) for r in rows], mat)
        return len(rows)

    def export(self, model: str) -> tuple[list[bytes], Any]:
        """Every stored key and vector of ``model`` (for a file cache)."""
        import numpy as np

        with self._lock:
            rows = self._conn.execute("SELECT key, vec FROM ev_text_vectors WHERE model = ? "
                                      "ORDER BY key", (model,)).fetchall()
        mat = (np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows]) if rows
               else np.zeros((0, 0), dtype=np.float32))
        return [bytes(r[0]) for r in rows], mat

    def load(self, model: str, keys: Sequence[bytes], mat: Any) -> int:
        """Store precomputed rows by key (a file cache read back; the caller owns the
        transaction)."""
        rows = [(k, model, mat[i].astype("<f4").tobytes()) for i, k in enumerate(keys)]
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO ev_text_vectors(key, model, vec) VALUES (?, ?, ?)",
                rows)
        return len(rows)
