"""A folder of ``.txt`` / ``.md`` files as documents: one document per file.

The id is the file's path under the folder (``notes/ice.md``), so ids are stable across
machines; the title is a Markdown file's first ``# heading``, else the file name without
its extension (``sea_level-rise`` -> ``sea level rise``); the text is the whole file.
Files are read in sorted path order. A file that is not UTF-8 or is empty is an
:class:`~claimfsm.skills.tools.ingest.IngestError` naming the file (``line`` 0), never a crash.

The folder is walked without recursion and read as it is walked: a batch is written as
soon as it is full, so memory holds one batch, not the folder. What is read is bounded:
folders at most :data:`MAX_FOLDER_DEPTH` levels down, at most :data:`MAX_FOLDER_ENTRIES`
files and folders, each file at most ``max_doc_bytes``. A symbolic link is read only when
it leads to a file inside the folder; one leading out of it is reported
(``OUTSIDE_FOLDER``) and not read, and a linked folder is never entered (its files, when
inside, are read under their own path). Only regular files are opened, never through a
link swapped in after the walk saw them.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from claimfsm.skills.limits import MAX_DOC_BYTES
from claimfsm.skills.tools.index import Document, EvidenceIndex, Source
from claimfsm.skills.tools.ingest_report import (
    BATCH_BYTES,
    IngestError,
    IngestReport,
    ProgressCallback,
    Tally,
)

__all__ = ["MAX_FOLDER_DEPTH", "MAX_FOLDER_ENTRIES", "SUFFIXES", "ingest_folder",
           "read_folder"]

SUFFIXES: tuple[str, ...] = (".txt", ".md")
"""What counts as a document file (case-insensitive); other files are ignored."""

MAX_FOLDER_DEPTH = 64
"""Folder levels below the ingested folder that are read; a deeper folder is reported
(``INPUT_TOO_LARGE``) and not entered."""

MAX_FOLDER_ENTRIES = 1_000_000
"""Files and folders one ingest looks at; past it the walk stops, reported."""

_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")
_OPEN = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _title(path: Path, text: str) -> str:
    if path.suffix.lower() == ".md":
        for line in text.splitlines():
            if line.strip():
                m = _HEADING.match(line)
                if m:
                    return m.group(1)
                break
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


def _read(path: str, rel: str, max_doc_bytes: int) -> Document | IngestError:
    """One document file, opened without following a link (the caller resolved any)."""
    try:
        fd = os.open(path, _OPEN)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return IngestError(line=0, code="UNREADABLE", field=rel,
                                   msg=f"{rel}: not a regular file")
            data = handle.read(max_doc_bytes + 1)
    except OSError as exc:
        return IngestError(line=0, code="UNREADABLE", field=rel,
                           msg=f"{rel}: cannot read: {exc.strerror or exc}")
    if len(data) > max_doc_bytes:
        size = os.path.getsize(path) if os.path.exists(path) else len(data)
        return IngestError(line=0, code="INPUT_TOO_LARGE", field=rel,
                           msg=f"{rel}: {max(size, len(data))} bytes, the limit is "
                           f"{max_doc_bytes} (--max-doc-bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return IngestError(line=0, code="NOT_UTF8", field=rel,
                           msg=f"{rel}: not UTF-8 text (byte {exc.start})")
    if not text.strip():
        return IngestError(line=0, code="EMPTY_FIELD", field=rel, msg=f"{rel}: empty file")
    return Document(doc_id=rel, title=_title(Path(rel), text), text=text.strip())


def _listing(path: str, budget: int) -> list[os.DirEntry[str]] | None:
    """A folder's entries by name; ``None`` past ``budget`` (before any is used, so a
    huge folder is refused whole rather than read in the file system's order)."""
    with os.scandir(path) as it:
        entries = list(islice(it, budget + 1))
    if len(entries) > budget:
        return None
    return sorted(entries, key=lambda e: e.name)


def _is_doc(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in SUFFIXES


def _entries(folder: str | Path, max_doc_bytes: int,
             ) -> Iterator[tuple[str, Document | IngestError, bool]]:
    """``(relative path, document or error, is a document file)``; ``False`` marks a
    problem of a folder or of the walk (too deep, too many entries, a link out of it)."""
    root = os.path.realpath(folder)
    seen = 0
    too_many = IngestError(line=0, code="INPUT_TOO_LARGE", field=str(folder),
                           msg=f"more than {MAX_FOLDER_ENTRIES} files and folders: the "
                           "rest of the folder is not read")
    try:
        first = _listing(root, MAX_FOLDER_ENTRIES)
    except OSError as exc:
        yield "", IngestError(line=0, code="UNREADABLE", field=str(folder),
                              msg=f"{folder}: cannot read: {exc.strerror or exc}"), False
        return
    if first is None:
        yield "", too_many, False
        return
    stack = [(iter(first), "", 1)]
    while stack:
        entries, prefix, depth = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        seen += 1
        rel = prefix + entry.name
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if os.path.commonpath([root, target]) != root:
                if _is_doc(entry.name) or os.path.isdir(target):
                    yield rel, IngestError(line=0, code="OUTSIDE_FOLDER", field=rel,
                                           msg=f"{rel}: a symbolic link out of the folder: "
                                           "not read"), _is_doc(entry.name)
            elif _is_doc(entry.name) and os.path.isfile(target):
                yield rel, _read(target, rel, max_doc_bytes), True
            continue
        if entry.is_dir(follow_symlinks=False):
            if depth > MAX_FOLDER_DEPTH:
                yield rel, IngestError(line=0, code="INPUT_TOO_LARGE", field=rel,
                                       msg=f"{rel}/: deeper than {MAX_FOLDER_DEPTH} folder "
                                       "levels: not read"), False
                continue
            try:
                listed = _listing(entry.path, MAX_FOLDER_ENTRIES - seen)
            except OSError as exc:
                yield rel, IngestError(line=0, code="UNREADABLE", field=rel,
                                       msg=f"{rel}/: cannot read: {exc.strerror or exc}"), False
                continue
            if listed is None:
                yield rel, too_many, False
                return
            stack.append((iter(listed), rel + "/", depth + 1))
            continue
        if _is_doc(entry.name) and entry.is_file(follow_symlinks=False):
            yield rel, _read(entry.path, rel, max_doc_bytes), True


def read_folder(folder: str | Path, *, max_doc_bytes: int = MAX_DOC_BYTES,
                ) -> Iterator[tuple[str, Document | IngestError]]:
    """``(relative path, Document | IngestError)`` for every document file under
    ``folder`` (recursively, sorted), and for each problem of the walk itself."""
    for rel, rec, _ in _entries(folder, max_doc_bytes):
        yield rel, rec


def ingest_folder(
    index: EvidenceIndex, folder: str | Path, *, source: Source | None = None,
    batch: int = 100, on_progress: ProgressCallback | None = None,
    max_doc_bytes: int = MAX_DOC_BYTES,
) -> IngestReport:
    """Load every document file of ``folder`` into ``index`` (``source`` default ``wiki``),
    writing a batch (``batch`` files, or about
    :data:`~claimfsm.skills.tools.ingest_report.BATCH_BYTES` of text) as soon as it is
    read; ``on_progress(files_read, 0)`` after each (the total is not known until the
    walk ends). ``lines`` counts the document files."""
    tally = Tally()
    pending: list[Document] = []
    held = 0

    def flush() -> None:
        nonlocal held
        if pending:
            tally.wrote(index.upsert_documents(pending, source=source or "wiki"))
            pending.clear()
            held = 0
        if on_progress is not None:
            on_progress(tally.lines, 0)

    try:
        for _, rec, counted in _entries(folder, max_doc_bytes):
            tally.lines += counted
            if isinstance(rec, IngestError):
                tally.refuse(rec, counted=counted)
                continue
            pending.append(rec)
            held += len(rec.text)
            if len(pending) >= max(1, batch) or held >= BATCH_BYTES:
                flush()
        flush()
    except sqlite3.Error as exc:
        # Earlier batches are committed; this one rolled back as a whole.
        tally.refuse(IngestError(line=0, code="INDEX_ERROR", msg=f"index: {exc}"),
                     counted=False)
    return tally.report()
