"""The embedded evidence index: SQLite FTS5 with BM25 ranking, pure stdlib ``sqlite3``.

Documents (``wiki``, ``web``, ``news``) and knowledge-base facts live in ``ev_``-prefixed
tables, so the index can share one SQLite file with the session store. User text never
reaches FTS5 as query syntax: :func:`fts_query` tokenises it and quotes every term.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claimfsm._base.errors import BadInput
from claimfsm._base.sqlite import SQLiteFileError, disk_error
from claimfsm._base.sqlite_read import ReadOnlyLink
from claimfsm.skills.analysis.text import STOPWORDS, tokens
from claimfsm.skills.tools.bm25 import Bm25
from claimfsm.skills.tools.documents import SOURCES, Document, Fact, Hit, Source
from claimfsm.skills.tools.index_file import connect_for_writing, reader_for
from claimfsm.skills.tools.index_schema import SCHEMA, TOKENIZE, UPSERT_DOC, UPSERT_FACT
from claimfsm.skills.tools.sentence_vectors import SentenceVectors
from claimfsm.skills.tools.vectors import DENSE_POOL, DenseStore, fuse_scores, ranked

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

TITLE_WEIGHT = 2.0
"""bm25 column weight of the title against 1.0 for the text: a hit in the title counts more."""
SNIPPET_CHARS = 200
_MAX_TERMS = 64  # bounds the OR-query a 500-character claim can produce


def query_terms(q: str) -> list[str]:
    """The distinct search terms of ``q``: lower-cased tokens, stopwords dropped unless
    nothing else remains, diacritics folded (``café`` -> ``cafe``), at most 64."""
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", q) if not unicodedata.combining(c)
    )
    toks = list(dict.fromkeys(tokens(folded)))
    content = [t for t in toks if t not in STOPWORDS]
    return (content or toks)[:_MAX_TERMS]


def fts_query(q: str) -> str:
    """An FTS5 MATCH expression that can only mean "any of these terms": each term is
    quoted as an FTS5 string (inner quotes doubled), joined with ``OR``. Empty if ``q``
    has no terms."""
    return _or_query(query_terms(q))


def _or_query(terms: list[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text[:SNIPPET_CHARS]
    space = cut.rfind(" ")
    if space > SNIPPET_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


# Constant SQL strings: sqlite3's statement cache keeps them prepared across queries.
# The inner query sorts only (rowid, score, doc_id); titles and texts are read for the
# top ``lim`` rows alone, which halves the cost on broad OR-queries.
_SEARCH = f"""SELECT d.doc_id, d.title, d.source, top.score, substr(d.text, 1, {SNIPPET_CHARS + 1})
    FROM (SELECT ev_docs_fts.rowid AS rid, e.doc_id AS doc_id,
                 round(-bm25(ev_docs_fts, {TITLE_WEIGHT}, 1.0), 6) AS score
          FROM ev_docs_fts JOIN ev_docs AS e ON e.rowid = ev_docs_fts.rowid
          WHERE ev_docs_fts MATCH ?{{filter}}
          ORDER BY score DESC, e.doc_id
          LIMIT ?) AS top
    JOIN ev_docs AS d ON d.rowid = top.rid
    ORDER BY top.score DESC, top.doc_id"""
_SEARCH_ALL = _SEARCH.format(filter="")
_SEARCH_SRC = _SEARCH.format(filter=" AND e.source = ?")
_ROWS = f"""SELECT rowid, doc_id, title, source, substr(text, 1, {SNIPPET_CHARS + 1})
    FROM ev_docs WHERE rowid IN (SELECT value FROM json_each(?))"""
_DOCS = f"""SELECT doc_id, title, source, substr(text, 1, {SNIPPET_CHARS + 1}) FROM ev_docs
    WHERE doc_id IN (SELECT value FROM json_each(?))"""
# BM25 (global statistics) of the given documents only: the whole-corpus ranking, restricted.
_BM25_OF = f"""SELECT e.doc_id, round(-bm25(ev_docs_fts, {TITLE_WEIGHT}, 1.0), 6)
    FROM ev_docs_fts JOIN ev_docs AS e ON e.rowid = ev_docs_fts.rowid
    WHERE ev_docs_fts MATCH ? AND e.doc_id IN (SELECT value FROM json_each(?))
    ORDER BY round(-bm25(ev_docs_fts, {TITLE_WEIGHT}, 1.0), 6) DESC, e.doc_id"""
_KB = """SELECT f.id, f.subject, f.relation, f.object, f.source,
        round(-bm25(ev_facts_fts, 2.0, 1.0, 1.0), 6) AS score
    FROM ev_facts_fts JOIN ev_facts AS f ON f.rowid = ev_facts_fts.rowid
    WHERE ev_facts_fts MATCH ?
    ORDER BY score DESC, f.id
    LIMIT ?"""


class EvidenceIndex:
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

    def search(self, q: str, *, lim: int = 5, src: str | None = None,
               dense: bool | None = None) -> list[Hit]:
        """The ``lim`` best documents for ``q`` (any term may match), best first; ties by
        ``doc_id``. ``src`` restricts to one source. An empty query gives no hits.

        With dense vectors, the BM25 and cosine top-``max(50, lim)`` documents are fused by
        score (:func:`~claimfsm.skills.tools.vectors.fuse_scores`); ties by ``doc_id``. ``dense``
        ``False`` ranks by BM25 alone even then (a lexical session on a hybrid index);
        ``None`` uses the vectors whenever there are some."""
        terms = query_terms(q)
        match = _or_query(terms)
        if not match or lim <= 0:
            return []
        if dense is not False and self._dense.active():
            return self._hybrid(q, terms, lim, src)
        return self._bm25(terms, lim, src)

    def _hybrid(self, q: str, terms: list[str], lim: int, src: str | None) -> list[Hit]:
        pool = max(DENSE_POOL, lim)
        lexical = {h.doc_id: h.score for h in self._bm25(terms, pool, src)}
        cands = list(dict.fromkeys([*lexical, *self._dense.top(q, pool, src)]))
        fused = fuse_scores(lexical, self._dense.sims(q, cands))
        best = sorted(fused, key=lambda d: (-fused[d], d))[:lim]
        with self._lock:
            rows = {r[0]: r for r in self._conn.execute(_DOCS, (json.dumps(best),))}
        return [Hit(doc_id=d, title=rows[d][1], source=rows[d][2], score=fused[d],
                    snippet=_snippet(rows[d][3])) for d in best if d in rows]

    def _bm25(self, terms: list[str], lim: int, src: str | None) -> list[Hit]:
        match = _or_query(terms)
        with self._lock:
            top = self._scores.top(self._conn, terms, lim, src)
            if top is not None:
                got = {r[0]: r for r in self._conn.execute(
                    _ROWS, (json.dumps([row for row, _, _ in top]),))}
                rows = [(got[row][1], got[row][2], got[row][3], score, got[row][4])
                        for row, _, score in top]
            elif src is None:
                rows = self._conn.execute(_SEARCH_ALL, (match, lim)).fetchall()
            else:
                rows = self._conn.execute(_SEARCH_SRC, (match, src, lim)).fetchall()
        return [Hit(doc_id=r[0], title=r[1], source=r[2], score=float(r[3]) + 0.0,
                    snippet=_snippet(r[4])) for r in rows]

    def rank_documents(self, q: str, doc_ids: Sequence[str], *,
                       dense: bool | None = None) -> list[tuple[str, float]]:
        """``doc_ids`` (duplicates and unknown ids dropped) ranked against ``q`` the way
        ``search`` ranks the corpus: BM25 with the whole index's statistics, fused with
        cosine similarity by score when there are vectors. Each gets its fused score (documents
        matching neither ranker: 0.0, in the given order at the end)."""
        ids = list(dict.fromkeys(doc_ids))
        terms = query_terms(q)
        match = _or_query(terms)
        with self._lock:
            fast = self._scores.of_documents(self._conn, terms, ids) if ids else None
            if fast is not None:
                lexical, known = fast
            else:
                lexical = ({str(r[0]): float(r[1])
                            for r in self._conn.execute(_BM25_OF, (match, json.dumps(ids)))}
                           if match and ids else {})
                known = {str(r[0]) for r in self._conn.execute(_DOCS, (json.dumps(ids),))}
        use = dense is not False and bool(ids) and self._dense.active()
        fused = fuse_scores(lexical, self._dense.sims(q, ids) if use else {})
        return ranked(ids, known, fused)

    def kb_lookup(self, q: str, *, lim: int = 5) -> list[Fact]:
        """The ``lim`` facts best matching ``q`` (subject weighted higher), ties by ``id``."""
        match = fts_query(q)
        if not match or lim <= 0:
            return []
        with self._lock:
            rows = self._conn.execute(_KB, (match, lim)).fetchall()
        return [
            Fact(id=r[0], subject=r[1], relation=r[2], object=r[3], source=r[4]) for r in rows
        ]

    def get_document(self, doc_id: str) -> Document | None:
        """The document stored under ``doc_id``, or ``None``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT doc_id, title, text, source FROM ev_docs WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        if row is None:
            return None
        return Document(doc_id=row[0], title=row[1], text=row[2], source=row[3])

    def count_documents(self) -> int:
        """How many documents are indexed."""
        return self._scalar("SELECT count(*) FROM ev_docs")

    def count_facts(self) -> int:
        """How many facts are indexed."""
        return self._scalar("SELECT count(*) FROM ev_facts")

    def sources(self) -> dict[str, int]:
        """Document count per source present, in source-name order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT source, count(*) FROM ev_docs GROUP BY source ORDER BY source"
            ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def _scalar(self, sql: str) -> int:
        with self._lock:
            row = self._conn.execute(sql).fetchone()
        return int(row[0])
