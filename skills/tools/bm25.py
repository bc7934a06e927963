"""FTS5's ``bm25()`` of the evidence index, computed from the index's own postings.

A search is an OR of a claim's terms: about 1,500 of Climate-FEVER's 5,240 sentences
match one, and FTS5 evaluates ``bm25()`` on every one of them (per row, per phrase),
which was a quarter of a claim's CPU. A term's contribution to a row's score depends on
the term, the row and the index's totals only, never on the rest of the query, so it is
computed once per term (:class:`Bm25`) and a query adds its terms' contributions.

Every figure is FTS5's own, read from the index it ranks with: postings through an
``fts5vocab`` table, row sizes from ``ev_docs_fts_docsize``, row count and token total
from the averages record; the arithmetic is ``fts5Bm25Function``'s, in its order, on
IEEE doubles, so a score is the same double FTS5 returns (``tests/skills/tools/
test_bm25.py`` compares them on every row of every query of its corpus). Query terms are
tokenised by an FTS5 table with the index's tokenizer. Anything else takes FTS5's path: a
term that is not one token (``1.5`` is the phrase ``1 5``), an index with another
tokenizer or above :data:`MAX_TOKENS`, an open transaction. The cache follows the index:
its averages and structure records change with every committed write (from any
connection), and a change drops everything cached; it holds one index's postings and
at most one score per posting, so it is bounded by :data:`MAX_TOKENS`.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from claimfsm._base.record import FACTORY, Record

__all__ = ["K1", "MAX_TOKENS", "B", "Bm25", "decode_varints"]

K1 = 1.2
B = 0.75
MAX_TOKENS = 500_000
"""The largest index (in indexed tokens) scored here: its postings are read in one pass
when it changes (0.17 s of CPU for Climate-FEVER's 160,000) and kept, with each term's
scores, about 190 bytes a posting in all (25 MB on Climate-FEVER with every term's
scores computed), so at most about 100 MB. A larger one is left to FTS5: at 100,000
documents (3 million tokens), reading a term's postings when a query first had it beat
FTS5 at the median but not at the tail (docs/bench.md)."""
_MAX_TOKENS = 65_536  # cached query-term tokenisations
_VOCAB = "claimfsm_ev_instances"
_FINGERPRINT = "SELECT id, block FROM ev_docs_fts_data WHERE id IN (1, 10) ORDER BY id"


def decode_varints(blob: bytes) -> list[int]:
    """The SQLite varints (big-endian 7-bit groups; a 9th byte carries 8 bits) in
    ``blob``, as FTS5 writes its averages and row-size records."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class _Corpus(Record):
    """One committed state of the index: its totals and each row's length term."""

    fingerprint: tuple[bytes, ...]
    rows: int
    avgdl: float
    norm: dict[int, float]  # rowid -> k1 * (1 - b + b * D / avgdl)
    docs: dict[int, tuple[str, str]]  # rowid -> (doc_id, source)
    rowid_of: dict[str, int]
    postings: dict[str, dict[int, float]]  # token -> rowid -> weighted frequency
    terms: dict[str, dict[int, float]] = field(default_factory=dict)  # token -> rowid -> score

    def __init__(self, fingerprint: tuple[bytes, ...], rows: int, avgdl: float,
                 norm: dict[int, float], docs: dict[int, tuple[str, str]],
                 rowid_of: dict[str, int], postings: dict[str, dict[int, float]],
                 terms: dict[str, dict[int, float]] = FACTORY) -> None:
        self.fingerprint = fingerprint
        self.rows = rows
        self.avgdl = avgdl
        self.norm = norm
        self.docs = docs
        self.rowid_of = rowid_of
        self.postings = postings
        self.terms = {} if terms is FACTORY else terms


class Bm25:
    """``bm25(ev_docs_fts, *weights)`` of an index's rows, one cache per index.

    Not thread-safe: the index calls it under its own lock."""

    def __init__(self, tokenize: str, weights: Sequence[float], columns: Sequence[str]) -> None:
        self._tokenize = tokenize
        self._weights = dict(zip(columns, weights, strict=True))
        self._corpus: _Corpus | None = None
        self._conn: sqlite3.Connection | None = None  # the one the vocabulary table is on
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._scratch: sqlite3.Connection | None = None

    def top(self, conn: sqlite3.Connection, terms: Sequence[str], lim: int,
            src: str | None) -> list[tuple[int, str, float]] | None:
        """The ``lim`` best rows of ``src`` (every source: ``None``) for the OR of
        ``terms``, as ``(rowid, doc_id, score)`` in the order of ``ORDER BY
        round(-bm25(...), 6) DESC, doc_id`` with that rounded score; ``None``: ask FTS5."""
        scores = self.scores(conn, terms)
        corpus = self._corpus
        if scores is None or corpus is None:
            return None
        docs = corpus.docs
        cands = scores if src is None else {
            row: v for row, v in scores.items() if docs[row][1] == src}
        # The rounding can tie rows with different scores, and ties go by doc_id: take
        # the best by score, then every row whose rounded score reaches the lim-th's.
        pool = lim + 16
        cut = heapq.nlargest(pool, cands.values())[-1] if len(cands) > pool else -math.inf
        best = sorted(((row, v) for row, v in cands.items() if v >= cut), key=lambda p: -p[1])
        rounded = [_round6(conn, v) for _, v in best]
        if len(best) < len(cands) and rounded[-1] >= rounded[lim - 1]:
            best = sorted(cands.items(), key=lambda p: -p[1])  # a tie at the cut: rank all
            rounded = [_round6(conn, v) for _, v in best]
        floor = rounded[lim - 1] if len(best) >= lim else -math.inf
        kept = [(row, docs[row][0], r) for (row, _), r in zip(best, rounded, strict=True)
                if r >= floor]
        kept.sort(key=lambda t: (-t[2], t[1]))
        return kept[:lim]

    def of_documents(self, conn: sqlite3.Connection, terms: Sequence[str],
                     doc_ids: Sequence[str]) -> tuple[dict[str, float], set[str]] | None:
        """The rounded scores of the ``doc_ids`` that match (best first, ties by doc_id)
        and which of them the index holds; ``None``: ask FTS5."""
        corpus = self._current(conn)
        if corpus is None:
            return None
        known = {d for d in doc_ids if d in corpus.rowid_of}
        scores = self.scores(conn, terms, [corpus.rowid_of[d] for d in doc_ids if d in known])
        if scores is None:
            return None
        docs = corpus.docs
        pairs = sorted(((docs[row][0], _round6(conn, s)) for row, s in scores.items()),
                       key=lambda p: (-p[1], p[0]))
        return dict(pairs), known

    def scores(self, conn: sqlite3.Connection, terms: Sequence[str],
               rowids: Iterable[int] | None = None) -> dict[int, float] | None:
        """``-bm25()`` of every row matching any of ``terms`` (each an FTS5 phrase of an
        OR-query; only ``rowids`` if given), by rowid; ``None`` when FTS5 must answer."""
        corpus = self._current(conn)
        if corpus is None:
            return None
        phrases = [self._token(t) for t in terms]
        if any(len(p) != 1 for p in phrases):
            return None
        contributions = [self._term(conn, corpus, p[0]) for p in phrases]
        # FTS5 adds every phrase's term in query order, 0.0 for an absent one: adding
        # 0.0 changes no double, so only the present ones are added, in the same order.
        if rowids is None:
            out: dict[int, float] = dict(contributions[0]) if contributions else {}
            get = out.get
            for contrib in contributions[1:]:
                for row, c in contrib.items():
                    out[row] = get(row, 0.0) + c
            return out
        wanted: dict[int, float] = {}
        for row in rowids:
            total, hit = 0.0, False
            for contrib in contributions:
                part = contrib.get(row)
                if part is not None:
                    total, hit = total + part, True
            if hit:
                wanted[row] = total
        return wanted

    def _current(self, conn: sqlite3.Connection) -> _Corpus | None:
        # Pending FTS5 writes of an open transaction are not in the records yet.
        if conn.in_transaction:
            return None
        fingerprint = tuple(bytes(r[1]) for r in conn.execute(_FINGERPRINT))
        corpus = self._corpus
        if corpus is not None and corpus.fingerprint == fingerprint and conn is self._conn:
            return corpus
        # One read transaction for the records, sizes and postings: without it a writer
        # in another process could commit between the statements, and the postings would
        # be cached under the fingerprint of an older index.
        conn.execute("BEGIN")
        try:
            fingerprint = tuple(bytes(r[1]) for r in conn.execute(_FINGERPRINT))
            self._corpus = corpus = self._load(conn, fingerprint)
        finally:
            conn.execute("COMMIT")
        return corpus

    def _load(self, conn: sqlite3.Connection, fingerprint: tuple[bytes, ...]) -> _Corpus | None:
        self._conn = None
        row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ev_docs_fts'").fetchone()
        if len(fingerprint) != 2 or row is None or f"tokenize='{self._tokenize}'" not in row[0]:
            return None
        totals = decode_varints(fingerprint[0])  # the averages record: rows, then tokens per column
        if len(totals) != 1 + len(self._weights) or totals[0] <= 0:
            return None
        rows, tokens = totals[0], sum(totals[1:])
        if tokens > MAX_TOKENS:
            return None
        avgdl = float(tokens) / float(rows)
        docs = {int(r[0]): (str(r[1]), str(r[2]))
                for r in conn.execute("SELECT rowid, doc_id, source FROM ev_docs")}
        norm: dict[int, float] = {}
        for rowid, size in conn.execute("SELECT id, sz FROM ev_docs_fts_docsize"):
            length = float(sum(decode_varints(bytes(size))))
            norm[int(rowid)] = K1 * (1 - B + B * length / avgdl)
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB} "
                     "USING fts5vocab(main, 'ev_docs_fts', 'instance')")
        self._conn = conn
        postings: dict[str, dict[int, float]] = {}
        weights = self._weights
        for term, doc, col in conn.execute(f"SELECT term, doc, col FROM temp.{_VOCAB}"):
            freq = postings.get(term)
            if freq is None:
                postings[term] = freq = {}
            freq[doc] = freq.get(doc, 0.0) + weights[col]
        return _Corpus(fingerprint=fingerprint, rows=rows, avgdl=avgdl, norm=norm, docs=docs,
                       rowid_of={doc_id: row for row, (doc_id, _) in docs.items()},
                       postings=postings)

    def _term(self, conn: sqlite3.Connection, corpus: _Corpus, token: str) -> dict[int, float]:
        """Each row's part of the score for one single-token phrase (rows holding it)."""
        found = corpus.terms.get(token)
        if found is not None:
            return found
        freq = corpus.postings.get(token, {})
        hits = len(freq)
        idf = math.log((corpus.rows - hits + 0.5) / (hits + 0.5))
        if idf <= 0.0:
            idf = 1e-6
        norm = corpus.norm
        found = {doc: idf * ((f * (K1 + 1.0)) / (f + norm[doc])) for doc, f in freq.items()}
        corpus.terms[token] = found  # at most one score per posting of the index
        return found

    def _token(self, term: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of ``term`` (a quoted phrase of the query)."""
        found = self._tokens.get(term)
        if found is not None:
            return found
        scratch = self._scratch
        if scratch is None:
            scratch = sqlite3.connect(":memory:", check_same_thread=False)
            scratch.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{self._tokenize}')")
            scratch.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            self._scratch = scratch
        with scratch:
            scratch.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (term,))
            found = tuple(r[0] for r in scratch.execute("SELECT term FROM v ORDER BY offset"))
            scratch.execute("DELETE FROM t")
        if len(self._tokens) >= _MAX_TOKENS:
            self._tokens.clear()
        self._tokens[term] = found
        return found


def _round6(conn: sqlite3.Connection, value: float) -> float:
    # SQLite's round() (it formats and re-reads the number), not Python's: the same
    # figure the SQL ranking reports.
    row = conn.execute("SELECT round(?, 6)", (value,)).fetchone()
    return float(row[0])
