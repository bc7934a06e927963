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
import stat
import tempfile
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from claimfsm._base.codes import ErrorCode
from claimfsm._base.sqlite import SQLiteFileError, os_failure
from claimfsm._base.sqlite_watch import Signature, Watch, signature

__all__ = ["Mode", "ReadOnlyLink", "Signature", "connect_writer", "read_mode", "signature"]

T = TypeVar("T")
Mode = Literal["shared", "main", "copy", "plain"]

# How often one read is run again because a writer changed the files under it before the
# link gives up (each retry opens the files afresh).
_ATTEMPTS = 20
_WAL_MODE = 2  # byte 18 of the header: 1 rollback journal, 2 WAL


def read_mode(path: str, seen: Signature | None = None, *, private: bool = False) -> Mode:
    """How a :class:`ReadOnlyLink` would read ``path`` now (or with the files ``seen``):
    a writer that may write anyway opens the file itself rather than copy it to read."""
    _, wal, shm = signature(path) if seen is None else seen
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        header = b""
    if private and header:
        return "copy"
    if len(header) < 20 or header[18] != _WAL_MODE:
        return "plain"  # SQLite reports a damaged or empty file itself
    if wal is not None and shm is not None:
        return "shared"
    if wal is None or wal[1] == 0:
        return "main"
    return "copy"


# SQLite maps a file's -shm once per process, for every connection to the file. Mapped
# read-only first (``readonly_shm``), a writer opened later in the same process fails
# "attempt to write a readonly database" for its whole life. So writers of this package
# open through :func:`connect_writer`: the process's shared-mode readers first let go of
# their connections, and a reader opened while a writer is open maps the -shm as it does.
_REGISTRY = threading.Lock()
_PENDING: dict[str, int] = {}
_WRITERS: dict[str, weakref.WeakSet[sqlite3.Connection]] = {}
_SHARED: dict[str, weakref.WeakSet[ReadOnlyLink]] = {}


class _Writer(sqlite3.Connection):
    """A connection that may write (a subclass, so the registry can refer to it weakly)."""


def connect_writer(path: str, **options: Any) -> sqlite3.Connection:
    """``sqlite3.connect(path, **options)`` for a connection that may write ``path``."""
    if path == ":memory:":
        memory: sqlite3.Connection = sqlite3.connect(path, **options)
        return memory
    key = os.path.realpath(path)
    with _REGISTRY:
        _PENDING[key] = _PENDING.get(key, 0) + 1
        links = list(_SHARED.pop(key, ()))
    try:
        for link in links:
            link.release()
        conn = sqlite3.connect(path, factory=_Writer, **options)
        with _REGISTRY:
            _WRITERS.setdefault(key, weakref.WeakSet()).add(conn)
        return conn
    finally:
        with _REGISTRY:
            _PENDING[key] -= 1
            if not _PENDING[key]:
                del _PENDING[key]


def _writing(key: str) -> bool:
    # Under _REGISTRY: a writer of this process is opening or holds ``key``.
    if _PENDING.get(key):
        return True
    for conn in list(_WRITERS.get(key, ())):
        try:
            conn.in_transaction  # noqa: B018  (raises once the connection is closed)
        except sqlite3.ProgrammingError:
            continue
        return True
    return False


def _uri(path: str, query: str) -> str:
    return f"{Path(path).resolve().as_uri()}?{query}"


class ReadOnlyLink:
    """A read-only view of the SQLite file at ``path`` that never writes next to it;
    :meth:`run` runs a read on it (see the module's notes for how).

    ``on_release``: for a holder of :attr:`connection` (the evidence index), called
    instead of closing it when a writer of this process is about to open the file; the
    holder calls :meth:`reconnect` under its own lock and takes the new connection."""

    def __init__(self, path: str, busy_timeout: float = 5.0, *, private: bool = False) -> None:
        self.path = path
        self._key = os.path.realpath(path)
        self._timeout = min(busy_timeout, 5.0)
        # ``private``: always read a writable private copy (for a reader that must create
        # tables of its own, such as an evidence index from before a table was added).
        self._private = private
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._seen: Signature = (None, None, None)
        self._watch: Watch | None = None
        self.mode: Mode = "main"
        self.on_release: Callable[[], None] | None = None
        self._copy: str | None = None
        self._cleanup: weakref.finalize | None = None  # type: ignore[type-arg]
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)
        except OSError:
            regular = True  # missing or unreadable: SQLite says which, creating nothing
        if not regular:  # reading a pipe's header would wait for a writer forever
            raise SQLiteFileError(f"--db: {path} is not a regular file (a device, a pipe "
                                  "or a socket)", code=ErrorCode.STORE_IO, field="db")
        self._open()

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection as it is now, for a caller that reads at once and is done (a
        command); a long-lived reader goes through :meth:`run`, which follows writers."""
        with self._lock:
            if self._conn is None:
                self._open()
            assert self._conn is not None
            return self._conn

    def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)``; run again on fresh files when a writer changed them under
        an unlocked read (``main`` mode), so ``fn`` must only read."""
        with self._lock:
            for _ in range(_ATTEMPTS):
                if self._conn is None or (self.mode == "copy"
                                          and signature(self.path) != self._seen):
                    self._open()  # a private copy is refreshed when the files moved on
                conn = self._conn
                assert conn is not None
                result = fn(conn)
                # Unlocked, the main file is checked after the read only: unchanged, with
                # no WAL grown beside it, since it was opened, means every commit there is
                # was read and none was half-way (a writer commits to the WAL first, and
                # changes the main file only by a checkpoint, which changes its mtime).
                watch = self._watch
                if watch is None or not watch.moved():
                    return result
                self._drop()
        raise SQLiteFileError(f"--db: {self.path} kept changing while it was read "
                              f"({_ATTEMPTS} attempts)", code=ErrorCode.STORE_BUSY, field="db")

    def reconnect(self) -> sqlite3.Connection:
        """A new connection in place of the current one (closed), chosen anew."""
        with self._lock:
            self._open()
            assert self._conn is not None
            return self._conn

    def release(self) -> None:
        """Let go of the -shm mapping for a writer of this process (see
        :func:`connect_writer`); the next read opens the file again."""
        if self.on_release is not None:
            self.on_release()
            return
        with self._lock:
            self._drop()

    def close(self) -> None:
        """Close the connection and delete a private copy (idempotent)."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
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
            self.mode = read_mode(self.path, seen, private=self._private)
            with _REGISTRY:
                written = _writing(self._key)
                if self.mode == "shared" and not written:
                    _SHARED.setdefault(self._key, weakref.WeakSet()).add(self)
            target, query = self.path, {
                # After a writer of this process, the -shm is mapped for writing already.
                "shared": "mode=ro" if written else "mode=ro&readonly_shm=1",
                "main": "mode=ro&immutable=1", "plain": "mode=ro",
                "copy": "mode=rw" if self._private else "mode=ro",
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
            if self.mode == "main":
                self._watch = Watch(self.path, seen)
            return
        raise SQLiteFileError(f"--db: {self.path} kept changing while it was opened",
                              code=ErrorCode.STORE_BUSY, field="db")

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
            raise SQLiteFileError(f"{msg} (a private copy for reading {self.path}, whose WAL "
                                  "has no -shm file)", code=code, field="db") from exc
        return self._copy
