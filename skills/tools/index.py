"""The embedded evidence index: SQLite FTS5 with BM25 ranking, pure stdlib ``sqlite3``.

Documents (``wiki``, ``web``, ``news``) and knowledge-base facts live in ``ev_``-prefixed
tables, so the index can share one SQLite file with the session store. User text never
reaches FTS5 as query syntax: :func:`fts_query` tokenises it and quotes every term
(:mod:`.index_terms`, re-exported here). This module holds the index's connection, the
opening of its file and every write; its queries are its base class
:class:`~.index_search.IndexSearch`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claimfsm._base.errors import BadInput
from claimfsm._base.sqlite import SQLiteFileError, disk_error
from claimfsm._base.sqlite_read import ReadOnlyLink
from claimfsm.skills.tools.bm25 import Bm25
from claimfsm.skills.tools.documents import SOURCES, Document, Fact, Hit, Source
from claimfsm.skills.tools.index_file import connect_for_writing, reader_for
from claimfsm.skills.tools.index_schema import SCHEMA, TOKENIZE, UPSERT_DOC, UPSERT_FACT
from claimfsm.skills.tools.index_search import IndexSearch
from claimfsm.skills.tools.index_terms import SNIPPET_CHARS, TITLE_WEIGHT, fts_query, query_terms
from claimfsm.skills.tools.sentence_vectors import SentenceVectors
from claimfsm.skills.tools.vectors import DenseStore

if TYPE_CHECKING:
    from claimfsm.skills.embed import Embedder

__all__ = [
    "SNIPPET_CHARS",
    "SOURCES",
    "TITLE_WEIGHT",
    "Document",
    "EvidenceIndex",
    "Fact",
    "Hit",
    "Source",
    "fts_query",
    "query_terms",
]


class EvidenceIndex(IndexSearch):
    """Full-text evidence index over one SQLite connection (thread-safe via a lock).

    With an embedder configured (:meth:`use_embedder`) documents also get dense vectors
    and ``search`` fuses BM25 with cosine similarity; without one it is BM25 alone."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self._dense = DenseStore(conn, self._lock)
        self._sentences = SentenceVectors(conn, self._lock)
        self._reader: ReadOnlyLink | None = None  # see open()
        self._path = ""
        self._scores = Bm25(TOKENIZE, (TITLE_WEIGHT, 1.0), ("title", "text"))
        with self._tx():
            for stmt in SCHEMA:
                conn.execute(stmt)

    @classmethod
    def open(cls, path: str | Path) -> EvidenceIndex:
        """Open (or create) the index in the SQLite file at ``path``, in WAL mode; a file
        SQLite cannot use is a :class:`~claimfsm._base.sqlite.SQLiteFileError`. An index
        that is all there is read without writing a byte of any file until its first
        write (:mod:`claimfsm.skills.tools.index_file`)."""
        try:
            reader = reader_for(path)
            if reader is None:
                return cls(connect_for_writing(path))
            try:
                index = cls(reader.connection)  # its schema is there: nothing is written
            except BaseException:
                reader.close()
                raise
            index._reader, index._path = reader, os.fspath(path)
            reader.on_release = index._reread
            return index
        except sqlite3.Error as exc:
            raise SQLiteFileError.from_sqlite(exc, path) from exc

    def _use(self, conn: sqlite3.Connection) -> None:
        # The vector stores are parts of the index that share its connection.
        self._conn = self._dense._conn = self._sentences._conn = conn

    def _reread(self) -> None:
        # A writer of this process is about to open the file: read on a new connection
        # (claimfsm._base.sqlite_read.connect_writer says why).
        with self._lock:
            if self._reader is not None:
                self._use(self._reader.reconnect())

    def _for_writing(self) -> None:
        # The first write of an index opened for reading: the file is opened for writing
        # (the reader closed first, so the writer maps the -shm for writing).
        with self._lock:
            reader, self._reader = self._reader, None
            if reader is None:
                return
            reader.close()
            try:
                conn = connect_for_writing(self._path)
            except sqlite3.Error as exc:
                self._reader = reader  # no writer: reads go on as they did
                self._use(reader.reconnect())
                raise SQLiteFileError.from_sqlite(exc, self._path) from exc
            self._use(conn)

    @property
    def dense(self) -> DenseStore:
        """The dense vectors of this index (empty until an embedder is configured)."""
        self._for_writing()  # handed out, they may be written
        return self._dense

    @property
    def sentences(self) -> SentenceVectors:
        """Sentence vectors by content hash (for the learned judge's head)."""
        self._for_writing()  # handed out, they may be written
        return self._sentences

    def embed_sentences(self, *, batch: int = 256,
                        on_batch: Callable[[int, int], None] | None = None) -> int:
        """Store a vector for every sentence of every document that has none yet, for the
        configured embedder (one transaction per batch). Returns how many."""
        if self._dense.embedder is None:
            return 0

        def commit(write: Callable[[], int]) -> int:
            with self._tx():
                return write()

        return self._sentences.fill(self._dense.embedder, batch=batch, commit=commit,
                                    on_batch=on_batch)

    def warm(self, *, limit: int = 20_000) -> int:
        """Give the configured embedder the stored sentence vectors it can keep."""
        if self._dense.embedder is None:
            return 0
        return self._sentences.warm(self._dense.embedder, limit=limit)

    def use_embedder(self, embedder: Embedder | None, *, fill: bool = False) -> int:
        """Rank with ``embedder`` too (``None``: BM25 only). ``fill`` embeds every document
        still without a vector for it; returns how many were embedded."""
        self._dense.configure(embedder)
        if not fill or embedder is None:
            return 0
        added = self.embed_missing()
        self.embed_sentences()
        return added

    def embed_missing(self, *, batch: int = 256,
                      on_batch: Callable[[int, int], None] | None = None) -> int:
        """Give every document without a vector for the configured embedder one, ``batch``
        documents per encoder call and transaction (an interrupted run keeps the batches
        it finished); ``on_batch(done, total)`` after each. Returns how many."""
        todo = self._dense.missing() if self._dense.embedder is not None else []
        done = 0
        size = max(1, batch)
        for start in range(0, len(todo), size):
            with self._tx():
                done += self._dense.embed(todo[start : start + size], batch=size)
            if on_batch is not None:
                on_batch(done, len(todo))
        return done

    def add_vectors(self, doc_ids: Sequence[str], mat: Any) -> int:
        """Store precomputed vectors (rows of ``mat``) of the configured embedder."""
        with self._tx():
            return self._dense.store(doc_ids, mat)

    def add_sentence_vectors(self, model: str, keys: Sequence[bytes], mat: Any) -> int:
        """Store precomputed sentence vectors of ``model`` by content key, committed: an
        open transaction would also send every later search to FTS5's ``bm25()``."""
        with self._tx():
            return self._sentences.load(model, keys, mat)

    @property
    def conn(self) -> sqlite3.Connection:
        """The underlying connection (shared with whoever opened it)."""
        return self._conn

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
            if self._reader is not None:
                self._reader.close()

    def __enter__(self) -> EvidenceIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        # A caller already inside a transaction owns the commit; otherwise one batch is
        # one transaction, all or nothing.
        with self._lock:
            if self._reader is not None and self._path:
                self._for_writing()
            if self._conn.in_transaction:
                yield
                return
            self._conn.execute("BEGIN")
            try:
                yield
                self._conn.commit()
            except BaseException as exc:
                self._conn.rollback()
                # A full or read-only disk is the file's condition, not a bad line: every
                # writer of the index (ingest, seeding, embedding) reports it by its code.
                failed = disk_error(exc, self._conn) if isinstance(exc, sqlite3.Error) else None
                if failed is not None:
                    raise failed from exc
                raise

    def add_documents(self, docs: Iterable[Document], *, source: Source | None = None) -> int:
        """Insert or replace (by ``doc_id``) ``docs`` in one transaction; ``source``, if
        given, overrides each document's own. Returns how many documents were written
        (new or changed: :meth:`upsert_documents`)."""
        return self.upsert_documents(docs, source=source)[0]

    def upsert_documents(
        self, docs: Iterable[Document], *, source: Source | None = None
    ) -> tuple[int, int]:
        """:meth:`add_documents`, returning ``(written, unchanged)``. A document stored
        with the same title, source and text is left alone (its vector too); a changed
        one loses its old vectors and, with an embedder configured, gets a new one."""
        if source is not None and source not in SOURCES:
            raise BadInput(f"source: must be one of {', '.join(SOURCES)}, got {source!r}",
                           field="source")
        rows = list({d.doc_id: (d.doc_id, d.title, source or d.source, d.text)
                     for d in docs}.values())  # the last of duplicate ids wins, as before
        with self._tx():
            ids = json.dumps([r[0] for r in rows])
            stored = {r[0]: tuple(r) for r in self._conn.execute(
                "SELECT doc_id, title, source, text FROM ev_docs WHERE doc_id IN "
                "(SELECT value FROM json_each(?))", (ids,))}
            fresh = [r for r in rows if stored.get(r[0]) != r]
            changed = json.dumps([r[0] for r in fresh if r[0] in stored])
            self._conn.execute("DELETE FROM ev_vectors WHERE doc_id IN "
                               "(SELECT value FROM json_each(?))", (changed,))
            self._conn.executemany(UPSERT_DOC, fresh)
            self._dense.embed([(r[0], r[1], r[3]) for r in fresh])
        if fresh:
            self._dense.invalidate()
        return len(fresh), len(rows) - len(fresh)

    def add_facts(self, facts: Iterable[Fact]) -> int:
        """Insert or replace (by ``id``) ``facts`` in one transaction; returns the count."""
        rows = [(f.id, f.subject, f.relation, f.object, f.source) for f in facts]
        with self._tx():
            self._conn.executemany(UPSERT_FACT, rows)
        return len(rows)
