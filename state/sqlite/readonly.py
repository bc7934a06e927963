"""Reading a SQLite file without writing a byte: no ``-wal`` or ``-shm`` created, no
checkpoint of a WAL a killed writer left, nothing changed in the files that are there.

SQLite's own read-only mode (``mode=ro``) is not enough: on a WAL-mode file it creates
the ``-wal`` and ``-shm`` files, rebuilds the shared-memory index after a crashed writer
and records its read marks in it. A :class:`ReadOnlyLink` picks, from the files it
finds, a way in that writes nothing (docs/storage.md, "Readers never write"):

- ``shared``: the ``-wal`` and its ``-shm`` are there (a live writer, or one that was
  killed): ``readonly_shm=1``, SQLite maps the index read-only, or, when nobody else has
  the file open, builds its own copy of it in memory from the WAL;
- ``main``: no WAL, or an empty one, and no ``-shm``: the main file holds every commit;
  read ``immutable=1`` (no locks, no side files). Because nothing is locked, a writer
  that starts meanwhile is noticed from the files (their sizes, times, the WAL appearing)
  after every read, which is then run again the way the new files call for;
- ``copy``: a WAL with commits but no ``-shm`` (files copied without it): SQLite cannot
  read that without creating the ``-shm``, so the file and its WAL are copied to a
  private temporary folder and read there (a cost in proportion to the file, paid once
  per open; the copy is deleted on close). A reader that must write tables of its own
  asks for such a copy whatever the files (``private=True``);
- ``plain``: a file in rollback-journal mode (never claimfsm's own): ``mode=ro``, which
  creates nothing for such a file.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from claimfsm._base.sqlite import os_failure
from claimfsm.state.errors import StoreError

__all__ = ["ReadOnlyLink", "Signature", "signature"]

T = TypeVar("T")
Mode = Literal["shared", "main", "copy", "plain"]
Signature = tuple[tuple[int, int, int] | None, ...]
"""``(st_ino, st_size, st_mtime_ns)`` of the file, its ``-wal`` and its ``-shm`` (``None``
for one that is not there): what a reader compares to notice a writer."""

# How often one read is run again because a writer changed the files under it before the
# link gives up (each retry opens the files afresh).
_ATTEMPTS = 20
_WAL_MODE = 2  # byte 18 of the header: 1 rollback journal, 2 WAL


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def signature(path: str) -> Signature:
    """The :data:`Signature` of ``path`` now."""
    return _stat(path), _stat(f"{path}-wal"), _stat(f"{path}-shm")


def _uri(path: str, query: str) -> str:
    return f"{Path(path).resolve().as_uri()}?{query}"


class ReadOnlyLink:
    """A read-only view of the SQLite file at ``path`` that never writes next to it;
    :meth:`run` runs a read on it (see the module's notes for how)."""

    def __init__(self, path: str, busy_timeout: float = 5.0, *, private: bool = False) -> None:
        self.path = path
        self._timeout = min(busy_timeout, 5.0)
        # ``private``: always read a writable private copy (for a reader that must create
        # tables of its own, such as an evidence index from before a table was added).
        self._private = private
        self._conn: sqlite3.Connection | None = None
        self._seen: Signature = (None, None, None)
        self.mode: Mode = "main"
        self._copy: str | None = None
        self._cleanup: weakref.finalize | None = None  # type: ignore[type-arg]
        self._open()

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection as it is now, for a caller that reads at once and is done (a
        command); a long-lived reader goes through :meth:`run`, which follows writers."""
        if self._conn is None:
            self._open()
        assert self._conn is not None
        return self._conn

    def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)``; run again on fresh files when a writer changed them under
        an unlocked read (``main`` mode), so ``fn`` must only read."""
        for _ in range(_ATTEMPTS):
            if self._conn is None or (self.mode in ("main", "copy")
                                      and signature(self.path) != self._seen):
                self._open()
            conn = self._conn
            assert conn is not None
            result = fn(conn)
            if self.mode != "main" or signature(self.path) == self._seen:
                return result
            self._drop()
        raise StoreError(f"--db: {self.path} kept changing while it was read "
                         f"({_ATTEMPTS} attempts)", field="db")

    def close(self) -> None:
        """Close the connection and delete a private copy (idempotent)."""
        self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None
            self._copy = None

    def _open(self) -> None:
        self._drop()
        for _ in range(_ATTEMPTS):
            seen = signature(self.path)
            self.mode = self._mode(seen)
            target, query = self.path, {
                "shared": "mode=ro&readonly_shm=1", "main": "mode=ro&immutable=1",
                "plain": "mode=ro", "copy": "mode=rw" if self._private else "mode=ro",
            }[self.mode]
            if self.mode == "copy":
                target = self._copy_files()
                if signature(self.path) != seen:  # a writer came while copying
                    self._drop()
                    continue
            conn = sqlite3.connect(_uri(target, query), uri=True, timeout=self._timeout,
                                   isolation_level=None, check_same_thread=False,
                                   cached_statements=256)
            conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
            self._conn, self._seen = conn, seen
            return
        raise StoreError(f"--db: {self.path} kept changing while it was opened", field="db")

    def _mode(self, seen: Signature) -> Mode:
        _, wal, shm = seen
        try:
            with open(self.path, "rb") as fh:
                header = fh.read(20)
        except OSError:
            header = b""
        if self._private and header:
            return "copy"
        if len(header) < 20 or header[18] != _WAL_MODE:
            return "plain"  # SQLite reports a damaged or empty file itself
        if wal is not None and shm is not None:
            return "shared"
        if wal is None or wal[1] == 0:
            return "main"
        return "copy"

    def _copy_files(self) -> str:
        folder = tempfile.mkdtemp(prefix="claimfsm-read-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
        self._copy = os.path.join(folder, "copy.db")
        try:
            shutil.copyfile(self.path, self._copy)
            if os.path.exists(f"{self.path}-wal"):
                shutil.copyfile(f"{self.path}-wal", f"{self._copy}-wal")
        except OSError as exc:
            self._drop()
            code, msg = os_failure(exc, folder)
            raise StoreError(f"{msg} (a private copy for reading {self.path}, whose WAL has "
                             "no -shm file)", code=code, field="db") from exc
        return self._copy
