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
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.limits import MAX_DOC_BYTES
from claimfsm.skills.tools.bounded import Bounds, OverLimit, SeenKeys, read_lines
from claimfsm.skills.tools.index import SOURCES, Document, EvidenceIndex, Fact, Source
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

T = TypeVar("T", Document, Fact)


class FieldMap(BaseModel):
    """Which JSON fields hold a document's id, title and text. ``title=None`` takes
    ``"title"``, else ``"article"`` (the Climate-FEVER corpus)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str = "id"
    title: str | None = None
    text: str = "text"


_JSON_TYPES: dict[type, str] = {
    type(None): "null", bool: "boolean", int: "number", float: "number",
    list: "array", dict: "object", str: "string",
}


def _string(n: int, obj: dict[str, Any], name: str) -> str | IngestError:
    if name not in obj:
        return IngestError(line=n, code="MISSING_FIELD", field=name,
                           msg=f"missing field {name!r}")
    value = obj[name]
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        return IngestError(line=n, code="WRONG_TYPE", field=name,
                           msg=f"field {name!r}: expected a string, got {kind}")
    if not value.strip():
        return IngestError(line=n, code="EMPTY_FIELD", field=name, msg=f"field {name!r} is empty")
    return value


def _object(n: int, raw: bytes) -> dict[str, Any] | IngestError:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return IngestError(line=n, code="BAD_JSON", msg=f"malformed JSON: {exc}")
    if not isinstance(obj, dict):
        kind = _JSON_TYPES.get(type(obj), type(obj).__name__)
        return IngestError(line=n, code="NOT_OBJECT", msg=f"expected a JSON object, got {kind}")
    return obj


def _fields(n: int, raw: bytes | dict[str, Any],
            names: Sequence[str]) -> dict[str, str] | IngestError:
    obj = _object(n, raw) if isinstance(raw, bytes) else raw
    if isinstance(obj, IngestError):
        return obj
    out: dict[str, str] = {}
    for name in names:
        value = _string(n, obj, name)
        if isinstance(value, IngestError):
            return value
        out[name] = value
    if "source" in obj and "source" not in names:
        source = _string(n, obj, "source")
        if isinstance(source, IngestError):
            return source
        out["source"] = source
    return out


def _parse_document(
    source: Source | None, fields: FieldMap | None = None
) -> Callable[[int, bytes], Document | IngestError]:
    """``source=None``: each line's own ``source`` (wiki|web|news), else ``wiki``."""
    fm = fields or FieldMap()

    def parse(n: int, raw: bytes) -> Document | IngestError:
        obj = _object(n, raw)
        if isinstance(obj, IngestError):
            return obj
        title = fm.title or ("article" if "title" not in obj and "article" in obj
                             else "title")
        f = _fields(n, obj, (fm.id, title, fm.text))
        if isinstance(f, IngestError):
            if f.code == "MISSING_FIELD" and f.field == "title" and fm.title is None:
                return f.model_copy(update={"msg": "missing field 'title' (or 'article'; "
                                                   "other names: --title-field)"})
            return f
        src = source or f.get("source", "wiki")
        if src not in SOURCES:
            return IngestError(line=n, code="BAD_SOURCE", field="source",
                               msg=f"field 'source': {src!r} is not one of {', '.join(SOURCES)}")
        return Document(doc_id=f[fm.id], title=f[title], text=f[fm.text], source=src)

    return parse


def _parse_corpus(source: Source) -> Callable[[int, bytes], Document | IngestError]:
    def parse(n: int, raw: bytes) -> Document | IngestError:
        f = _fields(n, raw, ("id", "article", "text"))
        if isinstance(f, IngestError):
            return f
        return Document(doc_id=f["id"], title=f["article"], text=f["text"], source=source)

    return parse


def _parse_fact(n: int, raw: bytes) -> Fact | IngestError:
    f = _fields(n, raw, ("id", "subject", "relation", "object"))
    if isinstance(f, IngestError):
        return f
    return Fact(id=f["id"], subject=f["subject"], relation=f["relation"], object=f["object"],
                source=f.get("source", "kb"))


def _records(
    path: str | Path, parse: Callable[[int, bytes], T | IngestError], max_line: int
) -> Iterator[tuple[int, int, T | IngestError]]:
    """``(line, bytes_read, record)`` for every non-blank line. A line longer than
    ``max_line`` bytes is reported and ends the reading: nothing reads without bound (a
    file with no newline at all, like ``/dev/zero``, costs ``max_line`` bytes)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below, after the yield
    except OSError as exc:
        yield 0, 0, IngestError(line=0, code="UNREADABLE",
                                msg=f"cannot read {path}: {exc.strerror or exc}")
        return
    with handle:
        pos = 0
        try:
            for n, pos, raw in read_lines(handle, Bounds(line=max_line)):
                if raw.strip():
                    yield n, pos, parse(n, raw)
        except OverLimit as over:
            n = over.line
            yield n, pos, IngestError(
                line=n, code="INPUT_TOO_LARGE",
                msg=f"line {n}: more than {max_line} bytes (raise --max-doc-bytes); "
                "the rest of the file is not read")
        except OSError as exc:  # a read error mid-file (EIO, a vanished network file)
            yield 0, pos, IngestError(line=0, code="UNREADABLE",
                                                msg=f"cannot read {path}: {exc.strerror or exc}")


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


# A JSONL line holds the text plus its id, title, source and JSON escaping.
_LINE_SLACK = 64 * 1024


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
