"""A queue for the processes that write one SQLite file.

SQLite lets one writer in at a time; a writer that finds the lock taken sleeps in its busy
handler (a millisecond at least, then longer), far longer than a commit holds the lock
(tens of microseconds). With several processes committing to one file (``claimfsm batch``
on Ray, a UI beside a CLI) most of their time went to those sleeps. Writers of this
package first take an exclusive ``flock`` on a file beside the database (``FILE-writer``),
so they wait in the kernel and are woken the moment the previous commit is done.

The queue is advice, not the lock: SQLite's own locking still guards the file, so a writer
that does not take it (another program, an older version) stays correct, only slower.
Where the lock file cannot be made (a read-only folder), or there is no ``flock`` (not a
POSIX system), writers go straight to SQLite.
"""

from __future__ import annotations

import os
from types import TracebackType

try:
    import fcntl
except ImportError:  # not a POSIX system: writers go straight to SQLite
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterQueue"]


class WriterQueue:
    """``with queue:`` holds the file's writer lock; re-entrant within one holder."""

    def __init__(self, db_path: str) -> None:
        self.path = f"{db_path}-writer"
        self._fd: int | None = None
        self._depth = 0
        self._usable = fcntl is not None

    def __enter__(self) -> WriterQueue:
        if self._depth == 0 and self._usable:
            if self._fd is None:
                try:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                except OSError:
                    self._usable = False
                    return self
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        self._depth += 1
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release the lock file (closing the descriptor drops any lock still held)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._depth = 0
