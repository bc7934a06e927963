"""The evidence index in PostgreSQL: one index shared by every worker of a cluster.

Same contract as the SQLite index (:class:`~claimfsm.skills.tools.index.EvidenceIndex`,
which this class stands in for), same tables by name (``ev_docs``, ``ev_facts``,
``ev_vectors``, ``ev_text_vectors``), in the schema the URL's ``search_path`` names.

Ranking: a ``tsvector`` (``english`` configuration: stemmed, stopwords dropped) with a GIN
index finds the documents matching any query term; they are scored with BM25 as FTS5
computes it, with the term frequency taken as 1 (PostgreSQL keeps positions, not counts,
within reach of a query; a Climate-FEVER document is one sentence, where a term seldom
repeats): ``sum over matched terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len /
avglen))``, k1 = 1.2, b = 0.75, idf = ``ln(1 + (N - df + 0.5) / (df + 0.5))``, ``tf`` 1, or
:data:`~claimfsm.skills.tools.index_terms.TITLE_WEIGHT` for a term in the title (FTS5 weights
the title's frequency the same way, inside the saturation). docs/retrieval.md compares
it with FTS5 on Climate-FEVER. Dense vectors (hybrid retrieval) are stored as in the
SQLite index, by the same code (:mod:`.vectors`, :mod:`.sentence_vectors`) through
:mod:`.index_pg_sql`'s connection adapter.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from claimfsm._base.errors import BadInput
from claimfsm.skills.tools.documents import SOURCES, Document, Fact, Hit, Source
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.index_pg_sql import (
    DOCS,
    KB,
    RANK_OF,
    SCHEMA,
    SEARCH,
    SEARCH_SRC,
    UPSERT_DOC,
    UPSERT_FACT,
    PgLink,
    fold,
    tsquery,
)
from claimfsm.skills.tools.index_terms import _snippet, query_terms
from claimfsm.skills.tools.sentence_vectors import SentenceVectors
from claimfsm.skills.tools.vectors import DENSE_POOL, DenseStore, fuse_scores, ranked

__all__ = ["PgEvidenceIndex", "is_pg_url", "open_index"]


def is_pg_url(text: str) -> bool:
    """Whether an index location is a PostgreSQL URL."""
    return text.startswith(("postgresql://", "postgres://"))


def open_index(where: str) -> EvidenceIndex:
    """The evidence index at ``where``: a ``postgresql://`` URL, else a SQLite file (or
    ``:memory:``)."""
    return PgEvidenceIndex.open(where) if is_pg_url(where) else EvidenceIndex.open(where)


class PgEvidenceIndex(EvidenceIndex):
    """The evidence index in a PostgreSQL database (thread-safe via a lock)."""

    def __init__(self, link: PgLink) -> None:
        self._link = link
        self._lock = threading.RLock()
        conn = cast(Any, link)
        self._dense = DenseStore(conn, self._lock)
        self._sentences = SentenceVectors(conn, self._lock)
        self._reader = None
        self._path = ""
        with self._tx():
            # Workers opening one new index at once: CREATE ... IF NOT EXISTS is not safe
            # against itself in PostgreSQL, so they take turns.
            link.execute("SELECT pg_advisory_xact_lock(hashtext('claimfsm.ev_schema'))")
            for stmt in SCHEMA:
                link.execute(stmt)

    @classmethod
    def open(cls, path: Any) -> PgEvidenceIndex:
        """Connect to the ``postgresql://`` URL ``path`` and create the tables if needed;
        a server that cannot be reached is a ``STORE_UNAVAILABLE`` error."""
        return cls(PgLink.connect(str(path)))

    def _for_writing(self) -> None:
        return None

    @property
    def conn(self) -> Any:
        """The connection adapter (``execute(sql, params)`` with ``?`` placeholders)."""
        return self._link

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._link.close()

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock, self._link.transaction():
            yield

    def upsert_documents(
        self, docs: Iterable[Document], *, source: Source | None = None
    ) -> tuple[int, int]:
        """As :meth:`EvidenceIndex.upsert_documents`: ``(written, unchanged)``."""
        if source is not None and source not in SOURCES:
            raise BadInput(f"source: must be one of {', '.join(SOURCES)}, got {source!r}",
                           field="source")
        rows = list({d.doc_id: (d.doc_id, d.title, source or d.source, d.text)
                     for d in docs}.values())
        with self._tx():
            stored = {r[0]: tuple(r) for r in self._link.execute(
                "SELECT doc_id, title, source, text FROM ev_docs WHERE doc_id = ANY(?)",
                ([r[0] for r in rows],))}
            fresh = [r for r in rows if stored.get(r[0]) != r]
            changed = [r[0] for r in fresh if r[0] in stored]
            if changed:
                self._link.execute("DELETE FROM ev_vectors WHERE doc_id = ANY(?)", (changed,))
            self._link.executemany(UPSERT_DOC, [
                (*r, fold(r[1]), fold(f"{r[1]} {r[3]}")) for r in fresh])
            self._dense.embed([(r[0], r[1], r[3]) for r in fresh])
            if fresh:
                self._link.refresh_stats()
        if fresh:
            self._dense.invalidate()
        return len(fresh), len(rows) - len(fresh)

    def add_facts(self, facts: Iterable[Fact]) -> int:
        """Insert or replace (by ``id``) ``facts`` in one transaction; returns the count."""
        rows = [(f.id, f.subject, f.relation, f.object, f.source, fold(f.subject),
                 fold(f"{f.relation} {f.object}")) for f in facts]
        with self._tx():
            self._link.executemany(UPSERT_FACT, rows)
        return len(rows)

    def search(self, q: str, *, lim: int = 5, src: str | None = None,
               dense: bool | None = None) -> list[Hit]:
        """As :meth:`EvidenceIndex.search`, ranked by the BM25 of the module's docstring."""
        terms = query_terms(q)
        if not terms or lim <= 0:
            return []
        if dense is not False and self._dense.active():
            pool = max(DENSE_POOL, lim)
            lexical = {h.doc_id: h.score for h in self._bm25(terms, pool, src)}
            cands = list(dict.fromkeys([*lexical, *self._dense.top(q, pool, src)]))
            fused = fuse_scores(lexical, self._dense.sims(q, cands))
            best = sorted(fused, key=lambda d: (-fused[d], d))[:lim]
            with self._lock:
                rows = {r[0]: r for r in self._link.execute(DOCS, (best,))}
            return [Hit(doc_id=d, title=rows[d][1], source=rows[d][2], score=fused[d],
                        snippet=_snippet(rows[d][3])) for d in best if d in rows]
        return self._bm25(terms, lim, src)

    def _bm25(self, terms: Sequence[str], lim: int, src: str | None) -> list[Hit]:
        with self._lock:
            if src is None:
                rows = self._link.execute(SEARCH, (list(terms), lim)).fetchall()
            else:
                rows = self._link.execute(SEARCH_SRC, (list(terms), src, lim)).fetchall()
        return [Hit(doc_id=r[0], title=r[1], source=r[2], score=float(r[3]) + 0.0,
                    snippet=_snippet(r[4])) for r in rows]

    def rank_documents(self, q: str, doc_ids: Sequence[str], *,
                       dense: bool | None = None) -> list[tuple[str, float]]:
        """As :meth:`EvidenceIndex.rank_documents`."""
        ids = list(dict.fromkeys(doc_ids))
        terms = query_terms(q)
        with self._lock:
            lexical = ({str(r[0]): float(r[1]) for r in self._link.execute(
                RANK_OF, (terms, ids))} if terms and ids else {})
            known = {str(r[0]) for r in self._link.execute(DOCS, (ids,))}
        use = dense is not False and bool(ids) and self._dense.active()
        fused = fuse_scores(lexical, self._dense.sims(q, ids) if use else {})
        return ranked(ids, known, fused)

    def kb_lookup(self, q: str, *, lim: int = 5) -> list[Fact]:
        """As :meth:`EvidenceIndex.kb_lookup`."""
        terms = query_terms(q)
        if not terms or lim <= 0:
            return []
        with self._lock:
            tq = tsquery(terms)
            rows = self._link.execute(KB, (tq, tq, lim)).fetchall()
        return [Fact(id=r[0], subject=r[1], relation=r[2], object=r[3], source=r[4])
                for r in rows]

    def get_document(self, doc_id: str) -> Document | None:
        """The document stored under ``doc_id``, or ``None``."""
        with self._lock:
            row = self._link.execute("SELECT doc_id, title, text, source FROM ev_docs "
                                     "WHERE doc_id = ?", (doc_id,)).fetchone()
        if row is None:
            return None
        return Document(doc_id=row[0], title=row[1], text=row[2], source=row[3])

    def sources(self) -> dict[str, int]:
        """Document count per source present, in source-name order."""
        with self._lock:
            rows = self._link.execute("SELECT source, count(*) FROM ev_docs GROUP BY source "
                                      "ORDER BY source").fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def _scalar(self, sql: str) -> int:
        with self._lock:
            row = self._link.execute(sql).fetchone()
        return int(row[0])

