"""A record file replayed without holding it: read once to check every line, then read
again, line by line, as the replay runs; and the bounded search for records in a folder.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from claimfsm.replay.record import (
    DEFAULT_LIMITS,
    End,
    Entry,
    Header,
    LineChecker,
    Person,
    RecordError,
    RecordLimits,
    RecordTooLarge,
    Rewind,
    Step,
    Summary,
    iter_lines,
    open_checked,
)
from claimfsm.replay.seal import SEAL_KEY, unseal
from claimfsm.skills.context import ToolCall

__all__ = ["MAX_RECORD_DEPTH", "MAX_RECORD_FILES", "RecordFile", "find_records", "open_record"]

#: The most records one ``claimfsm replay FOLDER`` replays.
MAX_RECORD_FILES = 10_000
#: How deep ``claimfsm replay FOLDER`` looks for records.
MAX_RECORD_DEPTH = 32


class RecordFile:
    """A record read from a file in two passes, never held whole.

    Opening reads every line once and checks it (as :func:`~claimfsm.replay.record.
    read_record` does), keeping only the header, the end line and a :class:`Summary`.
    :meth:`walk` reads the lines again while the replay runs, checking each again, and
    fails if the file changed in between. Memory does not grow with the file: one line
    at a time, plus two numbers for each line that holds tool calls (for a lenient
    replay's pool, read back on demand).
    """

    def __init__(self, path: str | Path, limits: RecordLimits = DEFAULT_LIMITS) -> None:
        self.source = str(path)
        self.limits = limits
        self._fh = open_checked(path, limits)
        try:
            self._read()
        except BaseException:
            self._fh.close()
            raise

    def _read(self) -> None:
        checker = LineChecker(self.source)
        digest = hashlib.sha256()
        self._offsets = array("Q")
        self._sizes = array("Q")
        for n, offset, raw, complete in self._lines(digest):
            line = checker.feed(n, raw, complete)
            if isinstance(line, Step) and line.calls:
                self._offsets.append(offset)
                self._sizes.append(len(raw))
        self.header: Header = checker.finish()
        self.end: End | None = checker.end
        self.summary: Summary = checker.summary
        self.verified = self.header.format >= 2
        self._digest = digest.digest()

    def _lines(self, digest: Any) -> Iterator[tuple[int, int, bytes, bool]]:
        try:
            yield from iter_lines(self._fh, self.limits, self.source, digest)
        except OSError as exc:
            raise RecordError(f"cannot read: {exc.strerror or exc}",
                              source=self.source) from None

    @property
    def format(self) -> int:
        """The record format (the header's)."""
        return self.header.format

    def walk(self) -> Iterator[tuple[int, Entry]]:
        """``(line number, entry)`` of every step and rewind line, read and checked again."""
        self._fh.seek(0)
        checker = LineChecker(self.source)
        digest = hashlib.sha256()
        for n, _, raw, complete in self._lines(digest):
            line = checker.feed(n, raw, complete)
            if isinstance(line, Step | Rewind | Person):
                yield n, line
        if digest.digest() != self._digest:
            raise RecordError("the file changed while it was replayed", source=self.source)

    def calls(self) -> Iterator[tuple[list[ToolCall], list[dict[str, Any]] | None]]:
        """Every step's calls and tool events, read back from the file (the file position
        of :meth:`walk` is left alone)."""
        fd = self._fh.fileno()
        for offset, size in zip(self._offsets, self._sizes, strict=True):
            raw = os.pread(fd, size, offset)
            obj = orjson.loads(raw)
            if SEAL_KEY in obj:
                obj = unseal(raw, obj, source=self.source)
            step = Step.model_validate(obj)
            yield step.calls, step.events

    def close(self) -> None:
        """Close the file."""
        self._fh.close()

    def __enter__(self) -> RecordFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_record(path: str | Path, limits: RecordLimits = DEFAULT_LIMITS) -> RecordFile:
    """Open and check a record file for replay (:class:`RecordFile`); close it after."""
    return RecordFile(path, limits)


def find_records(folder: Path, *, max_files: int = MAX_RECORD_FILES,
                 max_depth: int = MAX_RECORD_DEPTH) -> list[Path]:
    """Every ``*.jsonl`` under ``folder``, sorted; symbolic links to folders are not
    followed. More files or deeper folders than the limits: :class:`RecordTooLarge`."""
    found: list[Path] = []
    pending: list[tuple[Path, int]] = [(folder, 0)]
    while pending:
        here, depth = pending.pop()
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 > max_depth:
                            raise RecordTooLarge(f"folders nested deeper than {max_depth} "
                                                 "(MAX_RECORD_DEPTH)", source=entry.path)
                        pending.append((Path(entry.path), depth + 1))
                    elif entry.name.endswith(".jsonl"):
                        found.append(Path(entry.path))
                        if len(found) > max_files:
                            raise RecordTooLarge(f"more than {max_files:,} records "
                                                 "(MAX_RECORD_FILES)", source=str(folder))
        except OSError as exc:
            raise RecordError(f"cannot read: {exc.strerror or exc}", source=str(here)) from None
    return sorted(found)
