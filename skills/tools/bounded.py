"""Reading a user's input file with bounds, and remembering what it held in flat memory.

Every reader of a file a user hands to claimfsm (a claims file for ``batch``, a dataset
for ``eval`` and ``train``, a JSONL file for ``ingest``) takes its lines through
:func:`read_lines`: a line, the number of lines and the bytes read are all bounded, so
no input (``/dev/zero``, a pipe that never ends, a 1 GB line) makes a read without end or
a buffer without bound. The caller turns :class:`OverLimit` into its own stable code,
naming the line.

:class:`SeenKeys` answers "was this id on an earlier line, and on which?" for any number
of lines: a dict up to :data:`SPILL` keys, then a private temporary SQLite file (deleted
when closed), whose page cache keeps the memory flat however many keys follow.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import IO

from claimfsm._base.errors import ClaimFsmError, ErrorCode

__all__ = ["SPILL", "Bounds", "OverLimit", "SeenKeys", "read_lines"]

SPILL = 100_000
"""Keys :class:`SeenKeys` holds in a dict before it moves them to a temporary file
(about 10 MB of dict; past it, memory stays flat)."""


@dataclass(frozen=True)
class Bounds:
    """What one file may hold: ``line`` bytes per line (its line end included),
    ``lines`` lines (blank ones too) and ``size`` bytes in all; ``None``: no bound."""

    line: int
    lines: int | None = None
    size: int | None = None


class OverLimit(ClaimFsmError):
    """A file over one of its :class:`Bounds`; ``line`` is the 1-based line where the
    reading stopped and ``msg`` says which bound (``"line 3: more than 65536 bytes"``)."""

    code = ErrorCode.INPUT_TOO_LARGE

    def __init__(self, msg: str, *, line: int) -> None:
        super().__init__(msg)
        self.line = line


def read_lines(handle: IO[bytes], bounds: Bounds) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, bytes read so far, raw line)`` for every line of ``handle``, blank
    ones included. Reads at most ``bounds.line + 1`` bytes per call, so a line over the
    bound costs no more than that before :class:`OverLimit` stops the reading."""
    number = pos = 0
    while raw := handle.readline(bounds.line + 1):
        number += 1
        pos += len(raw)
        if len(raw) > bounds.line:
            raise OverLimit(f"line {number}: more than {bounds.line} bytes", line=number)
        if bounds.lines is not None and number > bounds.lines:
            raise OverLimit(f"more than {bounds.lines} lines", line=number)
        if bounds.size is not None and pos > bounds.size:
            raise OverLimit(f"more than {bounds.size} bytes", line=number)
        yield number, pos, raw


class SeenKeys:
    """Text keys with a number each (the line a key was first or last seen on).

    Use as a context manager, or :meth:`close` it: past :data:`SPILL` keys it holds a
    temporary file. ``spill`` sets another threshold (default: :data:`SPILL` as it is
    when the set is made).
    """

    def __init__(self, spill: int | None = None) -> None:
        self._spill = SPILL if spill is None else spill
        self._mem: dict[str, int] = {}
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> SeenKeys:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        if self._db is None:
            return len(self._mem)
        count: int = self._db.execute("SELECT count(*) FROM seen").fetchone()[0]
        return count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def get(self, key: str) -> int | None:
        """The number stored for ``key``, or ``None``."""
        if self._db is None:
            return self._mem.get(key)
        row = self._db.execute("SELECT line FROM seen WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def put(self, key: str, line: int) -> None:
        """Store ``line`` for ``key``, replacing what was there."""
        if self._db is None:
            self._mem[key] = line
            if len(self._mem) > self._spill:
                self._to_disk()
            return
        self._db.execute("INSERT OR REPLACE INTO seen (key, line) VALUES (?, ?)", (key, line))

    def first(self, key: str, line: int) -> int | None:
        """The number of an earlier sighting of ``key``; else ``line`` is stored for it
        and ``None`` returned."""
        earlier = self.get(key)
        if earlier is None:
            self.put(key, line)
        return earlier

    def close(self) -> None:
        """Forget every key (and delete the temporary file)."""
        self._mem.clear()
        if self._db is not None:
            self._db.close()
            self._db = None

    def _to_disk(self) -> None:
        # "" is SQLite's private temporary database: a file only once its page cache
        # (2 MB by default) overflows, deleted when the connection closes.
        db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE seen (key TEXT PRIMARY KEY, line INTEGER NOT NULL) "
                   "WITHOUT ROWID")
        db.execute("BEGIN")  # one transaction for the file's life: nothing to make durable
        db.executemany("INSERT INTO seen (key, line) VALUES (?, ?)", self._mem.items())
        self._mem.clear()
        self._db = db
