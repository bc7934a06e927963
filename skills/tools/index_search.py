"""The read half of the SQLite evidence index: search, ranking of given documents,
knowledge-base lookup, and the counts.

Its own module because reading is one job with its own statements (constant SQL that
sqlite3's statement cache keeps prepared), while :class:`~.index.EvidenceIndex` keeps
the connection, the file's opening and every write. :class:`IndexSearch` holds no state
of its own: it reads the connection, lock, dense store and BM25 scorer the index sets.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence

from claimfsm.skills.tools.bm25 import Bm25
from claimfsm.skills.tools.documents import Document, Fact, Hit
from claimfsm.skills.tools.index_terms import (
    SNIPPET_CHARS,
    TITLE_WEIGHT,
    _or_query,
    _snippet,
    fts_query,
    query_terms,
)
from claimfsm.skills.tools.vectors import DENSE_POOL, DenseStore, fuse_scores, ranked

__all__ = ["IndexSearch"]

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


class IndexSearch:
    """The queries of :class:`~.index.EvidenceIndex` (its base class)."""

    _conn: sqlite3.Connection
    _lock: threading.RLock
    _dense: DenseStore
    _scores: Bm25

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
