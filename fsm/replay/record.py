"""Session records: reading them line by line, within limits, every line checked as it
is read. The line models live in :mod:`claimfsm.replay.lines` and are re-exported here.

:class:`LineChecker` checks one line after another (JSON, the line kind and its fields,
the format, the seal of a format 2 line, the chain of heads, the end line); the readers
feed it lines of at most :attr:`RecordLimits.line_bytes`, never the whole file at once:

- :func:`parse_record`: bytes in memory to a :class:`Record`;
- :func:`read_record`: a file to a ``Record`` (every entry held: for records of a size a
  program wants in memory);
- :func:`claimfsm.replay.source.open_record`: a file read twice, entries never all held
  (``claimfsm replay``).

Errors: :class:`RecordError` (``BAD_RECORD``), :class:`RecordTampered`
(``RECORD_TAMPERED``), :class:`RecordTooLarge` (``INPUT_TOO_LARGE``), each naming the line.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

import orjson
from pydantic import ValidationError

from claimfsm.replay.errors import RecordError, RecordTampered, RecordTooLarge
from claimfsm.replay.lines import (
    FORMAT_2_FIELDS,
    FORMAT_VERSION,
    KINDS,
    READABLE_FORMATS,
    End,
    Entry,
    Header,
    Person,
    Record,
    Rewind,
    Step,
    Summary,
    encode_line,
    engine_version,
)
from claimfsm.replay.seal import SEAL_KEY, is_digest, unseal
from claimfsm.skills.base import describe_validation_error

__all__ = [
    "FORMAT_VERSION",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_LINES",
    "MAX_RECORD_LINE_BYTES",
    "READABLE_FORMATS",
    "End",
    "Entry",
    "Header",
    "LineChecker",
    "Person",
    "Record",
    "RecordError",
    "RecordLimits",
    "RecordTampered",
    "RecordTooLarge",
    "Rewind",
    "Step",
    "Summary",
    "encode_line",
    "engine_version",
    "iter_lines",
    "open_checked",
    "parse_record",
    "read_record",
]

#: The longest line read (a step line holds its tool results: one is at most 4 MiB).
MAX_RECORD_LINE_BYTES = 32 * 2**20
#: The most lines one record may have (a session's steps, rewinds and two more).
MAX_RECORD_LINES = 1_000_000
#: The largest record file.
MAX_RECORD_BYTES = 4 * 2**30


@dataclass(frozen=True)
class RecordLimits:
    """The limits a record is read within (docs/limits.md)."""

    line_bytes: int = MAX_RECORD_LINE_BYTES
    lines: int = MAX_RECORD_LINES
    file_bytes: int = MAX_RECORD_BYTES


DEFAULT_LIMITS = RecordLimits()


def iter_lines(fh: IO[bytes], limits: RecordLimits, source: str,
               digest: Any = None) -> Iterator[tuple[int, int, bytes, bool]]:
    """``(number, offset, bytes without the newline, whether it ended with one)`` of each
    line; a line or a count over the limits is :class:`RecordTooLarge`, found after
    reading at most one line more than the limit allows. ``digest`` (a hashlib object)
    is fed every byte read."""
    cap = limits.line_bytes + 1
    n = offset = 0
    while True:
        raw = fh.readline(cap)
        if not raw:
            return
        n += 1
        if n > limits.lines:
            raise RecordTooLarge(f"more than {limits.lines:,} lines, the limit "
                                 "(MAX_RECORD_LINES)", line=n, source=source)
        complete = raw[-1:] == b"\n"
        if not complete and len(raw) == cap:
            raise RecordTooLarge(f"a line over {limits.line_bytes:,} bytes, the limit "
                                 "(MAX_RECORD_LINE_BYTES)", line=n, source=source)
        if digest is not None:
            digest.update(raw)
        yield n, offset, raw[:-1] if complete else raw, complete
        offset += len(raw)


def open_checked(path: str | Path, limits: RecordLimits = DEFAULT_LIMITS) -> IO[bytes]:
    """``path`` opened for reading, once it is known to be a regular file within the size
    limit (a device such as /dev/zero, a FIFO or a folder is refused before a byte is
    read, and a FIFO without a writer never blocks the open)."""
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", source=source) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordError("not a regular file (a record is a file, not a device, a FIFO, "
                              "a socket or a folder)", source=source)
        if st.st_size > limits.file_bytes:
            raise RecordTooLarge(f"{st.st_size:,} bytes, over the limit of "
                                 f"{limits.file_bytes:,} (MAX_RECORD_BYTES)", source=source)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def parse_record(data: bytes, *, source: str = "",
                 limits: RecordLimits = DEFAULT_LIMITS) -> Record:
    """Parse and check a record from its bytes."""
    if len(data) > limits.file_bytes:
        raise RecordTooLarge(f"{len(data):,} bytes, over the limit of {limits.file_bytes:,} "
                             "(MAX_RECORD_BYTES)", source=source)
    return _collect(io.BytesIO(data), source, limits)


def read_record(path: str | Path, limits: RecordLimits = DEFAULT_LIMITS) -> Record:
    """Read and check a record file, every entry kept in memory (any problem:
    :class:`RecordError`)."""
    with open_checked(path, limits) as fh:
        try:
            return _collect(fh, str(path), limits)
        except OSError as exc:
            raise RecordError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None


def _collect(fh: IO[bytes], source: str, limits: RecordLimits) -> Record:
    checker = LineChecker(source)
    entries: list[Entry] = []
    for n, _, raw, complete in iter_lines(fh, limits, source):
        line = checker.feed(n, raw, complete)
        if isinstance(line, Step | Rewind | Person):
            entries.append(line)
    header = checker.finish()
    return Record(header=header, entries=tuple(entries), end=checker.end, source=source,
                  verified=header.format >= 2, _summary=[checker.summary])


class LineChecker:
    """Checks a record's lines in order; :meth:`feed` returns each line parsed."""

    def __init__(self, source: str = "") -> None:
        self.source = source
        self.header: Header | None = None
        self.end: End | None = None
        self.summary = Summary()
        self._last_h: str | None = None

    def feed(self, n: int, raw: bytes, complete: bool = True) -> Header | Entry | End:
        """Check line ``n`` (its bytes without the newline; ``complete``: it had one)."""
        obj = self._load(n, raw, complete)
        sealed = SEAL_KEY in obj
        if sealed:
            obj = unseal(raw, obj, line=n, source=self.source)
        line = self._validate(n, obj)
        if self.end is not None:
            self._fail("a line after the end line", n)
        if n == 1:
            if not isinstance(line, Header):
                self._fail("the first line must be the header", n)
            if line.format not in READABLE_FORMATS:
                self._fail(f"format {line.format} is not supported (this engine reads "
                           f"{' and '.join(map(str, READABLE_FORMATS))})", n)
            self.header = line
        elif isinstance(line, Header):
            self._fail("a second header line", n)
        self._check_format(n, obj, line, sealed)
        if isinstance(line, End):
            if line.rev != self.summary.head:
                self._fail(f"end.rev is {line.rev}, the last revision is {self.summary.head}",
                           n)
            if self._sealed and line.h != self._last_h:
                self._fail(f"end.h is not the chain hash of revision {line.rev}", n)
            self.end = line
        elif isinstance(line, Step | Rewind | Person):
            self._check_chain(line, n)
            self.summary.add(line)
        if line.h is not None:
            self._last_h = line.h
        return line

    def finish(self) -> Header:
        """The header, once every line was fed (a record without lines is refused)."""
        if self.header is None:
            self._fail("empty record: no header line", 1)
        return self.header

    @property
    def _sealed(self) -> bool:
        return self.header is not None and self.header.format >= 2

    def _fail(self, msg: str, n: int) -> NoReturn:
        raise RecordError(msg, line=n, source=self.source)

    def _load(self, n: int, raw: bytes, complete: bool) -> dict[str, Any]:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            what = "truncated line (cut short, no newline at the end)" if not complete \
                else "not JSON"
            self._fail(f"{what}: {exc}", n)
        if not isinstance(obj, dict):
            self._fail("expected a JSON object", n)
        return obj

    def _validate(self, n: int, obj: dict[str, Any]) -> Header | Entry | End:
        t = obj.get("t")
        kind = KINDS.get(t) if isinstance(t, str) else None  # a list would not even hash
        if kind is None:
            self._fail(f"t: unknown line kind {obj.get('t')!r} (expected one of "
                       f"{', '.join(KINDS)})", n)
        try:
            line: Header | Entry | End = kind.model_validate(obj)  # type: ignore[assignment]
        except ValidationError as exc:
            self._fail(describe_validation_error(exc), n)
        return line

    def _check_format(self, n: int, obj: dict[str, Any], line: Any, sealed: bool) -> None:
        if not self._sealed:
            if sealed:
                self._fail(f"{SEAL_KEY}: a format 1 record has no seals", n)
            for key in sorted(FORMAT_2_FIELDS & obj.keys()):
                self._fail(f"{key}: not a field of format 1 records", n)
            return
        if not sealed:
            raise RecordTampered("the line has no seal (sum): every line of a format 2 "
                                 "record has one", line=n, source=self.source, field=SEAL_KEY)
        committed = not isinstance(line, Step) or line.committed
        if committed != is_digest(line.h):
            self._fail("h: a committed line needs its revision's chain hash (64 hex digits)"
                       if committed else "h: an uncommitted step has no revision hash", n)
        if isinstance(line, Step) and committed != (line.events is not None):
            self._fail("events: a committed step lists its tool events" if committed
                       else "events: an uncommitted step has none", n)

    def _check_chain(self, entry: Entry, n: int) -> None:
        head = self.summary.head
        if entry.head != head:
            self._fail(f"head is {entry.head}, expected {head} (a step is missing or out of "
                       "order)", n)
        if isinstance(entry, Person):
            if entry.rev != head + 1:
                self._fail(f"rev is {entry.rev}, expected head+1 = {head + 1}", n)
            return
        if isinstance(entry, Rewind):
            if entry.rev != head + 1 or not 0 <= entry.to <= head:
                self._fail(f"rewind rev {entry.rev} to {entry.to} does not follow head "
                           f"{head}", n)
            return
        if entry.committed != (entry.rev is not None):
            self._fail("committed and rev disagree", n)
        if entry.rev is None:
            if entry.after != entry.before:
                self._fail("an uncommitted step cannot change the state", n)
            return
        if entry.rev != head + 1:
            self._fail(f"rev is {entry.rev}, expected head+1 = {head + 1}", n)
