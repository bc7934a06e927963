"""The evidence index's SQLite schema and upserts (documents, facts, FTS5, vectors)."""

from __future__ import annotations

from claimfsm.skills.tools.sentence_vectors import SENTENCE_SCHEMA
from claimfsm.skills.tools.vectors import VEC_SCHEMA

__all__ = ["SCHEMA", "TOKENIZE", "UPSERT_DOC", "UPSERT_FACT"]

# Porter stemming on both sides lets "warming" find "warmed"; diacritics are folded so
# the index agrees with query_terms.
TOKENIZE = "porter unicode61 remove_diacritics 2"

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS ev_docs (
        rowid INTEGER PRIMARY KEY,
        doc_id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('wiki', 'web', 'news')),
        text TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ev_docs_source ON ev_docs(source)",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS ev_docs_fts USING fts5(
        title, text, content='ev_docs', content_rowid='rowid', tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER IF NOT EXISTS ev_docs_ai AFTER INSERT ON ev_docs BEGIN
        INSERT INTO ev_docs_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS ev_docs_ad AFTER DELETE ON ev_docs BEGIN
        INSERT INTO ev_docs_fts(ev_docs_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS ev_docs_au AFTER UPDATE ON ev_docs BEGIN
        INSERT INTO ev_docs_fts(ev_docs_fts, rowid, title, text)
        VALUES ('delete', old.rowid, old.title, old.text);
        INSERT INTO ev_docs_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
    END""",
    """CREATE TABLE IF NOT EXISTS ev_facts (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        subject TEXT NOT NULL,
        relation TEXT NOT NULL,
        object TEXT NOT NULL,
        source TEXT NOT NULL)""",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS ev_facts_fts USING fts5(
        subject, relation, object, content='ev_facts', content_rowid='rowid',
        tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER IF NOT EXISTS ev_facts_ai AFTER INSERT ON ev_facts BEGIN
        INSERT INTO ev_facts_fts(rowid, subject, relation, object)
        VALUES (new.rowid, new.subject, new.relation, new.object);
    END""",
    """CREATE TRIGGER IF NOT EXISTS ev_facts_ad AFTER DELETE ON ev_facts BEGIN
        INSERT INTO ev_facts_fts(ev_facts_fts, rowid, subject, relation, object)
        VALUES ('delete', old.rowid, old.subject, old.relation, old.object);
    END""",
    """CREATE TRIGGER IF NOT EXISTS ev_facts_au AFTER UPDATE ON ev_facts BEGIN
        INSERT INTO ev_facts_fts(ev_facts_fts, rowid, subject, relation, object)
        VALUES ('delete', old.rowid, old.subject, old.relation, old.object);
        INSERT INTO ev_facts_fts(rowid, subject, relation, object)
        VALUES (new.rowid, new.subject, new.relation, new.object);
    END""",
    *VEC_SCHEMA,
    *SENTENCE_SCHEMA,
)

# Unchanged rows are skipped so re-ingesting a corpus does not churn the FTS index.
UPSERT_DOC = """INSERT INTO ev_docs(doc_id, title, source, text) VALUES (?, ?, ?, ?)
    ON CONFLICT(doc_id) DO UPDATE SET
        title = excluded.title, source = excluded.source, text = excluded.text
    WHERE title IS NOT excluded.title OR source IS NOT excluded.source
        OR text IS NOT excluded.text"""
UPSERT_FACT = """INSERT INTO ev_facts(id, subject, relation, object, source)
    VALUES (?, ?, ?, ?, ?)
    ON CONFLICT(id) DO UPDATE SET subject = excluded.subject,
        relation = excluded.relation, object = excluded.object, source = excluded.source
    WHERE subject IS NOT excluded.subject OR relation IS NOT excluded.relation
        OR object IS NOT excluded.object OR source IS NOT excluded.source"""
