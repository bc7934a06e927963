"""The PostgreSQL evidence index's schema, statements and connection (:mod:`.index_pg`).

:class:`PgLink` is the one connection of an index: autocommit outside
:meth:`PgLink.transaction`, ``?`` placeholders (the SQLite spelling the vector stores
use) turned into psycopg's, SQLite's ``INSERT OR REPLACE`` into an upsert, and every
server error into a :class:`~claimfsm.skills.tools.core.ToolError` with code
``INDEX_ERROR`` (``STORE_UNAVAILABLE`` when the server cannot be reached at all).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from claimfsm._base.errors import ErrorCode
from claimfsm.skills.tools.core import ToolError
from claimfsm.skills.tools.index_terms import SNIPPET_CHARS, TITLE_WEIGHT

__all__ = ["DOCS", "KB", "RANK_OF", "SCHEMA", "SEARCH", "SEARCH_SRC", "UPSERT_DOC",
           "UPSERT_FACT", "PgLink", "fold", "tsquery"]

K1, B = 1.2, 0.75
"""FTS5's BM25 constants."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS ev_docs (
        doc_id text PRIMARY KEY,
        title text NOT NULL,
        source text NOT NULL CHECK (source IN ('wiki', 'web', 'news')),
        text text NOT NULL,
        title_tsv tsvector NOT NULL,
        tsv tsvector NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ev_docs_tsv ON ev_docs USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS ev_docs_source ON ev_docs (source)",
    # N and the summed lengths for BM25, refreshed in the writing transaction.
    """CREATE TABLE IF NOT EXISTS ev_stats (
        one boolean PRIMARY KEY DEFAULT true CHECK (one), n bigint NOT NULL,
        total bigint NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS ev_facts (
        id text PRIMARY KEY, subject text NOT NULL, relation text NOT NULL,
        object text NOT NULL, source text NOT NULL,
        tsv tsvector NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ev_facts_tsv ON ev_facts USING gin (tsv)",
    """CREATE TABLE IF NOT EXISTS ev_vectors (
        doc_id text NOT NULL, model text NOT NULL, vec bytea NOT NULL,
        PRIMARY KEY (doc_id, model))""",
    """CREATE TABLE IF NOT EXISTS ev_text_vectors (
        key bytea NOT NULL, model text NOT NULL, vec bytea NOT NULL,
        PRIMARY KEY (key, model))""",
)

# The vectors are built from the diacritics-folded text (fold(), as the query's terms
# are folded) in the statement: PostgreSQL's english configuration keeps accents.
UPSERT_DOC = """INSERT INTO ev_docs (doc_id, title, source, text, title_tsv, tsv)
    VALUES (?, ?, ?, ?, to_tsvector('english', ?), to_tsvector('english', ?))
    ON CONFLICT (doc_id) DO UPDATE SET title = EXCLUDED.title, source = EXCLUDED.source,
        text = EXCLUDED.text, title_tsv = EXCLUDED.title_tsv, tsv = EXCLUDED.tsv"""
UPSERT_FACT = """INSERT INTO ev_facts (id, subject, relation, object, source, tsv)
    VALUES (?, ?, ?, ?, ?, setweight(to_tsvector('english', ?), 'A')
                          || setweight(to_tsvector('english', ?), 'B'))
    ON CONFLICT (id) DO UPDATE SET subject = EXCLUDED.subject, relation = EXCLUDED.relation,
        object = EXCLUDED.object, source = EXCLUDED.source, tsv = EXCLUDED.tsv"""
_STATS = """INSERT INTO ev_stats (n, total)
    SELECT count(*), coalesce(sum(length(tsv)), 0) FROM ev_docs
    ON CONFLICT (one) DO UPDATE SET n = EXCLUDED.n, total = EXCLUDED.total"""

# One GIN lookup per query term gives both its matches and its document frequency
# (global, as FTS5's statistics are, whatever the source filter); each matched document
# scores the BM25 of the terms it holds, with tf = 1 (see index_pg); titles and texts
# are read for the best ``lim`` only. MATERIALIZED: each part is computed once.
_MATCHES = """WITH q AS MATERIALIZED (
        SELECT i, to_tsquery('english', quote_literal(lex)) AS q
        FROM unnest(?::text[]) WITH ORDINALITY AS u(lex, i)),
    m AS MATERIALIZED (
        SELECT q.i, d.doc_id, d.source, length(d.tsv) AS len, (d.title_tsv @@ q.q) AS in_title
        FROM q JOIN ev_docs AS d ON d.tsv @@ q.q),
    df AS (SELECT i, count(*)::float8 AS df FROM m GROUP BY i),
    s AS (SELECT greatest(n, 1)::float8 AS n,
                 greatest(total, 1)::float8 / greatest(n, 1) AS avg
          FROM ev_stats LIMIT 1)"""
# The term's weighted frequency, as FTS5's column weights make it: 1 in the text,
# TITLE_WEIGHT in the title (the title's weight applied outside the saturation instead,
# x2 on the score, cost 0.03 of recall@5 on Climate-FEVER dev).
_TF = f"(1 + ({TITLE_WEIGHT}::float8 - 1) * m.in_title::int)"
_SCORE = f"""round(sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * ({K1} + 1) * {_TF}
            / ({_TF} + {K1} * (1 - {B} + {B} * m.len / s.avg)))::numeric, 6)::float8"""
# float8 throughout: the same sum in numeric took twice as long.
_SEARCH = f"""{_MATCHES},
    top AS (SELECT m.doc_id, {_SCORE} AS score
            FROM m JOIN df USING (i) CROSS JOIN s{{filter}}
            GROUP BY m.doc_id ORDER BY score DESC, m.doc_id LIMIT ?)
    SELECT d.doc_id, d.title, d.source, top.score, substr(d.text, 1, {SNIPPET_CHARS + 1})
    FROM top JOIN ev_docs AS d USING (doc_id)
    ORDER BY top.score DESC, d.doc_id"""
SEARCH = _SEARCH.format(filter="")
SEARCH_SRC = _SEARCH.format(filter=" WHERE m.source = ?")
RANK_OF = f"""{_MATCHES}
    SELECT m.doc_id, {_SCORE} AS score
    FROM m JOIN df USING (i) CROSS JOIN s
    WHERE m.doc_id = ANY(?)
    GROUP BY m.doc_id ORDER BY score DESC, m.doc_id"""
DOCS = f"""SELECT doc_id, title, source, substr(text, 1, {SNIPPET_CHARS + 1}) FROM ev_docs
    WHERE doc_id = ANY(?)"""
KB = """SELECT id, subject, relation, object, source,
        round(ts_rank(tsv, to_tsquery('english', ?))::numeric, 6) AS score
    FROM ev_facts WHERE tsv @@ to_tsquery('english', ?)
    ORDER BY score DESC, id LIMIT ?"""


def fold(text: str) -> str:
    """``text`` without diacritics (``café`` -> ``cafe``), as the query's terms are."""
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def tsquery(terms: Sequence[str]) -> str:
    """``to_tsquery`` text meaning "any of these terms": each quoted as a lexeme."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


_REPLACE = re.compile(r"INSERT OR REPLACE INTO (ev_vectors|ev_text_vectors)\((\w+), model, vec\)")


def _pg(sql: str) -> str:
    # The vector stores speak SQLite; their statements are simple enough to translate.
    m = _REPLACE.search(sql)
    if m is not None:
        sql = (sql.replace("INSERT OR REPLACE INTO", "INSERT INTO")
               + f" ON CONFLICT ({m.group(2)}, model) DO UPDATE SET vec = EXCLUDED.vec")
    return sql.replace("%", "%%").replace("?", "%s")


def _connect(psycopg: Any, url: str) -> Any:
    conn = psycopg.connect(url, autocommit=True)
    # The planner's estimates for the scoring join are far off (a bag of OR-ed terms),
    # and JIT-compiling a 5 ms query took 2.3 s (measured on PostgreSQL 15): no JIT here.
    conn.execute("SET jit = off")
    return conn


class PgLink:
    """One psycopg connection, with SQLite-style ``execute``/``executemany``."""

    def __init__(self, conn: Any, url: str = "") -> None:
        self._conn = conn
        self._url = url
        self._depth = 0

    @classmethod
    def connect(cls, url: str) -> PgLink:
        """Connect in autocommit mode; an unreachable server is ``STORE_UNAVAILABLE``."""
        try:
            import psycopg
        except ImportError:
            raise ToolError("--index postgresql://: the 'postgres' extra is not installed "
                            "(pip install 'claimfsm[postgres]')",
                            code=ErrorCode.STORE_UNAVAILABLE, field="index") from None
        try:
            return cls(_connect(psycopg, url), url)
        except psycopg.Error as exc:
            raise ToolError(f"index: cannot connect: {str(exc).strip()}"[:300],
                            code=ErrorCode.STORE_UNAVAILABLE, field="index") from None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; the cursor (``fetchone``/``fetchall``/iteration)."""
        return self._guard(lambda: self._conn.execute(_pg(sql), params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement per row."""
        if not rows:
            return

        def run() -> None:
            with self._conn.cursor() as cur:
                cur.executemany(_pg(sql), rows)

        self._guard(run)

    def refresh_stats(self) -> None:
        """Recount N and the total length for BM25 (inside the writer's transaction)."""
        self.execute(_STATS)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction (nested calls join the outer one)."""
        if self._depth:
            yield
            return
        self._depth += 1
        try:
            with self._conn.transaction():
                yield
        finally:
            self._depth -= 1

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def _guard(self, fn: Any) -> Any:
        import psycopg

        try:
            return fn()
        except psycopg.Error as exc:
            failure = exc
            # A connection the server dropped (a restart, an idle timeout) is opened again
            # once, outside a transaction (where a retry could repeat half of it).
            if self._conn.closed and self._url and not self._depth:
                try:
                    self._conn = _connect(psycopg, self._url)
                    return fn()
                except psycopg.Error as again:
                    failure = again
            raise ToolError(f"index: {str(failure).strip()}"[:300],
                            code=ErrorCode.INDEX_ERROR) from None
