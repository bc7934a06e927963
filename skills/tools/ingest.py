"""Loading documents and facts from JSONL into the evidence index.

A bad line never stops a load and never costs a good line: it becomes an
:class:`IngestError` with its 1-based line number, a stable code and a message naming the
field. Formats (one JSON object per line, UTF-8; extra fields are ignored):

- documents: ``{"id", "title", "text"}``, or ``"article"`` for the title, which makes the
  Climate-FEVER corpus (``{"id": "Article:12", "article": ..., "text": ...}``) a documents
  file as it is; other field names through :class:`FieldMap`
- facts: ``{"id", "subject", "relation", "object"}`` plus an optional ``"source"``

A folder of ``.txt``/``.md`` files is one document per file (:mod:`claimfsm.skills.tools.folder`).
Re-ingesting a document that is stored unchanged writes nothing (``unchanged`` counts it).
Within one file the first line of an id wins: a later line with the same id is reported
(``DUPLICATE_ID``, naming the first line) and skipped. A load streams: it holds one batch
(at most ``batch`` records and about :data:`~claimfsm.skills.tools.ingest_report.BATCH_BYTES`
of text) and the ids read so far (:class:`~claimfsm.skills.tools.bounded.SeenKeys`).
Each line is parsed, and the file read, by :mod:`.ingest_lines`; this module loads.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from claimfsm.skills.limits import MAX_DOC_BYTES
from claimfsm.skills.tools.bounded import SeenKeys
from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact, Source
from claimfsm.skills.tools.ingest_lines import (
    _LINE_SLACK,
    FieldMap,
    T,
    _parse_corpus,
    _parse_document,
    _parse_fact,
    _records,
)
from claimfsm.skills.tools.ingest_report import (
    BATCH_BYTES,
    IngestError,
    IngestReport,
    ProgressCallback,
    Tally,
)

__all__ = [
    "FieldMap",
    "IngestError",
    "IngestReport",
    "ProgressCallback",
    "ingest_corpus",
    "ingest_documents",
    "ingest_facts",
    "read_corpus",
    "read_corpus_sentences",
    "read_documents",
    "read_facts",
]


def read_documents(
    path: str | Path, *, source: Source | None = None
) -> Iterator[tuple[int, Document | IngestError]]:
    """``(line, Document | IngestError)`` for each non-blank line of a documents file."""
    for n, _, rec in _records(path, _parse_document(source), MAX_DOC_BYTES + _LINE_SLACK):
        yield n, rec


def read_facts(path: str | Path) -> Iterator[tuple[int, Fact | IngestError]]:
    """``(line, Fact | IngestError)`` for each non-blank line of a facts file."""
    for n, _, rec in _records(path, _parse_fact, MAX_DOC_BYTES + _LINE_SLACK):
        yield n, rec


def read_corpus(
    path: str | Path, *, source: Source = "wiki"
) -> Iterator[tuple[int, Document | IngestError]]:
    """``(line, Document | IngestError)`` for a Climate-FEVER ``corpus.jsonl``: ``doc_id`` is
    the corpus id (``"Article:12"``), ``title`` the article."""
    for n, _, rec in _records(path, _parse_corpus(source), MAX_DOC_BYTES + _LINE_SLACK):
        yield n, rec


def read_corpus_sentences(path: str | Path, *, source: Source = "wiki") -> Iterator[Document]:
    """The good documents of a Climate-FEVER corpus file (bad lines are skipped; use
    :func:`read_corpus` or :func:`ingest_corpus` to see them)."""
    for _, rec in read_corpus(path, source=source):
        if isinstance(rec, Document):
            yield rec


def _key(rec: Document | Fact) -> str:
    return rec.doc_id if isinstance(rec, Document) else rec.id


def _weight(rec: Document | Fact) -> int:
    # What a held record costs, roughly: its text (a fact is a few short strings).
    return len(rec.title) + len(rec.text) if isinstance(rec, Document) else 256


def _ingest(
    path: str | Path,
    parse: Callable[[int, bytes], T | IngestError],
    add: Callable[[list[T]], tuple[int, int]],
    *,
    batch: int,
    on_progress: ProgressCallback | None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    try:
        total = os.path.getsize(path)
    except OSError:
        total = 0
    size = max(1, batch)
    pending: list[T] = []
    held = 0
    tally = Tally()

    def flush(pos: int) -> None:
        nonlocal held
        if pending:
            tally.wrote(add(pending))
            pending.clear()
            held = 0
        if on_progress is not None:
            on_progress(pos, total)

    with SeenKeys() as seen:
        try:
            pos = 0
            for n, read, rec in _records(path, parse, max_doc_bytes + _LINE_SLACK):
                pos = read
                if n:
                    tally.lines += 1  # line 0 reports an unreadable file, not a line
                text = getattr(rec, "text", None)
                if isinstance(text, str) and len(text) > max_doc_bytes:
                    rec = IngestError(line=n, code="INPUT_TOO_LARGE", field="text",
                                      msg=f"text: {len(text)} characters, the limit is "
                                      f"{max_doc_bytes} (--max-doc-bytes)")
                if isinstance(rec, IngestError):
                    tally.refuse(rec, counted=n > 0)
                    continue
                # The first line of an id wins: a later one would silently replace it
                # (or count as a second addition), so it is reported instead.
                earlier = seen.first(_key(rec), n)
                if earlier is not None:
                    tally.refuse(IngestError(
                        line=n, code="DUPLICATE_ID", field="id",
                        msg=f"id {_key(rec)!r} already on line {earlier}"))
                    continue
                pending.append(rec)
                held += _weight(rec)
                if len(pending) >= size or held >= BATCH_BYTES:
                    flush(pos)
            flush(total)  # the whole file has been read, trailing blank lines included
        except sqlite3.Error as exc:
            # Earlier batches are committed; this one rolled back as a whole.
            tally.refuse(IngestError(line=0, code="INDEX_ERROR", msg=f"index: {exc}"),
                         counted=False)
    return tally.report()


def ingest_documents(
    index: EvidenceIndex,
    path: str | Path,
    *,
    source: Source | None = None,
    batch: int = 500,
    on_progress: ProgressCallback | None = None,
    fields: FieldMap | None = None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    """Load a documents JSONL file into ``index`` in batches of ``batch`` (one transaction
    each), tagging every document with ``source`` (``None``: each line's own ``source``
    field, else ``wiki``); ``fields`` names the id, title and text fields."""
    return _ingest(path, _parse_document(source, fields),
                   lambda docs: index.upsert_documents(docs, source=source),
                   batch=batch, on_progress=on_progress,
                   max_doc_bytes=max_doc_bytes)


def ingest_facts(
    index: EvidenceIndex,
    path: str | Path,
    *,
    batch: int = 500,
    on_progress: ProgressCallback | None = None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    """Load a facts JSONL file into ``index`` in batches."""
    return _ingest(path, _parse_fact, lambda facts: (index.add_facts(facts), 0), batch=batch,
                   on_progress=on_progress,
                   max_doc_bytes=max_doc_bytes)


def ingest_corpus(
    index: EvidenceIndex,
    path: str | Path,
    *,
    source: Source = "wiki",
    batch: int = 500,
    on_progress: ProgressCallback | None = None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    """Load a Climate-FEVER ``corpus.jsonl`` into ``index`` (one document per sentence)."""
    return _ingest(path, _parse_corpus(source),
                   lambda docs: index.upsert_documents(docs, source=source),
                   batch=batch, on_progress=on_progress,
                   max_doc_bytes=max_doc_bytes)
