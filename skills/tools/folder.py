"""A folder of ``.txt`` / ``.md`` files as documents: one document per file.

The id is the file's path under the folder (``notes/ice.md``), so ids are stable across
machines; the title is a Markdown file's first ``# heading``, else the file name without
its extension (``sea_level-rise`` -> ``sea level rise``); the text is the whole file.
Files are read in sorted path order. A file that is not UTF-8 or is empty is an
:class:`~claimfsm.skills.tools.ingest.IngestError` naming the file (``line`` 0), never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from claimfsm.skills.limits import MAX_DOC_BYTES
from claimfsm.skills.tools.index import Document, EvidenceIndex, Source
from claimfsm.skills.tools.ingest import IngestError, IngestReport, ProgressCallback

__all__ = ["SUFFIXES", "ingest_folder", "read_folder"]

SUFFIXES: tuple[str, ...] = (".txt", ".md")
"""What counts as a document file (case-insensitive); other files are ignored."""

_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")


def _title(path: Path, text: str) -> str:
    if path.suffix.lower() == ".md":
        for line in text.splitlines():
            if line.strip():
                m = _HEADING.match(line)
                if m:
                    return m.group(1)
                break
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


def read_folder(folder: str | Path, *, max_doc_bytes: int = MAX_DOC_BYTES,
                ) -> Iterator[tuple[str, Document | IngestError]]:
    """``(relative path, Document | IngestError)`` for every document file under
    ``folder`` (recursively, sorted)."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*")
                   if p.is_file() and p.suffix.lower() in SUFFIXES)
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            if path.stat().st_size > max_doc_bytes:
                yield rel, IngestError(line=0, code="INPUT_TOO_LARGE", field=rel,
                                       msg=f"{rel}: {path.stat().st_size} bytes, the limit is "
                                       f"{max_doc_bytes} (--max-doc-bytes)")
                continue
            text = path.read_bytes().decode("utf-8")
        except OSError as exc:
            yield rel, IngestError(line=0, code="UNREADABLE", field=rel,
                                   msg=f"{rel}: cannot read: {exc.strerror or exc}")
            continue
        except UnicodeDecodeError as exc:
            yield rel, IngestError(line=0, code="NOT_UTF8", field=rel,
                                   msg=f"{rel}: not UTF-8 text (byte {exc.start})")
            continue
        if not text.strip():
            yield rel, IngestError(line=0, code="EMPTY_FIELD", field=rel, msg=f"{rel}: empty file")
            continue
        yield rel, Document(doc_id=rel, title=_title(path, text), text=text.strip())


def ingest_folder(
    index: EvidenceIndex, folder: str | Path, *, source: Source | None = None,
    batch: int = 100, on_progress: ProgressCallback | None = None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    """Load every document file of ``folder`` into ``index`` (``source`` default ``wiki``),
    ``batch`` files per transaction; ``on_progress(files_done, files_total)``."""
    items = list(read_folder(folder, max_doc_bytes=max_doc_bytes))
    errors = [rec for _, rec in items if isinstance(rec, IngestError)]
    docs = [rec for _, rec in items if isinstance(rec, Document)]
    added = unchanged = 0
    for start in range(0, len(docs), max(1, batch)):
        written, same = index.upsert_documents(docs[start : start + batch],
                                               source=source or "wiki")
        added += written
        unchanged += same
        if on_progress is not None:
            on_progress(start + len(docs[start : start + batch]), len(docs))
    return IngestReport(added=added, errors=errors, lines=len(items), unchanged=unchanged)
