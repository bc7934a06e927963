"""The plumbing under :class:`claimfsm.state.sqlite.store.SQLiteStore`: options,
connections, the read and write paths, batches, and the caches' lifetime (made, cleared,
closed). Reads by revision through the caches are :mod:`claimfsm.state.sqlite.entries`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from claimfsm._base.errors import BadInput, ErrorCode
from claimfsm._base.sqlite_read import ReadOnlyLink, read_mode
from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite.batch import begin, end, savepoint
from claimfsm.state.sqlite.db import (
    DURABILITY_MODES,
    Durability,
    connect,
    is_busy,
    retrying,
    sync_wal,
    transaction,
)
from claimfsm.state.sqlite.group import GroupCommitter
from claimfsm.state.sqlite.lru import Lru
from claimfsm.state.sqlite.probe import before_writing, check_file, store_error
from claimfsm.state.sqlite.rows import Entry
from claimfsm.state.sqlite.schema import init_schema
from claimfsm.state.sqlite.shares import Share
from claimfsm.state.sqlite.writers import WriterQueue

__all__ = ["SQLiteCore"]

T = TypeVar("T")


class SQLiteCore:
    """Connection, caches and the read/write paths (see
    :class:`claimfsm.state.sqlite.store.SQLiteStore`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "normal",
        snapshot_every: int = 8,
        cache_size: int = 1024,
        busy_timeout: float = 30.0,
        group_window: float = 0.0,
        readonly: bool = False,
    ) -> None:
        if durability not in DURABILITY_MODES:
            raise BadInput(f"durability must be one of {DURABILITY_MODES}, got {durability!r}",
                           field="durability")
        if snapshot_every < 1:
            raise BadInput("snapshot_every must be at least 1", field="snapshot_every")
        self.path = os.fspath(path)
        self.durability = durability
        self.snapshot_every = snapshot_every
        self._budget = busy_timeout
        self._lock = threading.RLock()
        self.readonly = readonly
        self._window = group_window
        self._link: ReadOnlyLink | None = None
        self._conn: sqlite3.Connection | None = None
        # The writer's cursor for the cold read's ``_all`` (state/sqlite/entries.py; under
        # ``_lock``): a cursor made per read costs ~1.3k instructions of a cold read's ~150k.
        self._cursor: sqlite3.Cursor | None = None
        self._group: GroupCommitter | None = None
        self._catalog: Any = None  # the CatalogReader of the first listing
        self._wal = False  # the writer's journal is WAL (set when it opens)
        try:
            if readonly:
                # For commands that only read: a view that writes no byte of any file.
                check_file(self.path)
                self._link = ReadOnlyLink(self.path, busy_timeout)
            elif before_writing(self.path) and read_mode(self.path) in ("main", "shared"):
                # A store as this version writes it is read the same way until its first
                # write: a UI or an export that only reads changes nothing.
                self._link = ReadOnlyLink(self.path, busy_timeout)
            else:
                self._open_writer()
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from exc
        # Writers of one file queue on a lock file instead of sleeping in SQLite's busy
        # handler (state/sqlite/writers.py); nothing to queue for in memory or read-only.
        self._queue: AbstractContextManager[object] = (
            WriterQueue(self.path) if not readonly and self.path != ":memory:"
            else nullcontext())
        self._ids: dict[str, int] = {}
        self._entries: Lru[tuple[str, int], Entry] = Lru(cache_size)
        self._blobs: Lru[str, bytes] = Lru(max(64, cache_size // 4))
        self._known: Lru[str, bool] = Lru(65536)
        # Session number -> the segments it shares with its parents (state/sqlite/shares.py):
        # written with the session, changed only by an erase of a parent.
        self._shared: dict[int, tuple[Share, ...]] = {}
        self._closed = False
        self._batching = False  # inside batch(): writes are savepoints of its transaction
        # A fork's commit in ``full`` is not synced by itself (:meth:`_write`'s
        # ``synced``); ``close`` syncs the WAL once if one was.
        self._unsynced = False

    def _open_writer(self) -> sqlite3.Connection:
        """The write connection (and the group committer), opened on the first write."""
        # The reader goes first: the writer must not share its read-only -shm mapping.
        link, self._link = self._link, None
        if link is not None:
            link.close()
        try:
            conn = connect(self.path, self.durability, self._budget)
            try:
                init_schema(conn, self._budget)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            if link is not None:  # no writer (a full disk...): reads go on as they did
                self._link = ReadOnlyLink(self.path, self._budget)
            raise
        self._conn = conn
        self._cursor = conn.cursor()
        # Deferring a commit's sync is safe only in WAL mode, which a file system without
        # shared memory may have refused.
        self._wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        if self.durability == "group":
            path, budget = self.path, self._budget
            self._group = GroupCommitter(lambda: connect(path, "group", budget), budget,
                                         self._window)
        if self._catalog is not None:
            self._catalog.readonly = False
        return conn

    # Every read and write goes through these three, and each turns what SQLite raises
    # (a damaged file, a read-only one, a full disk) into the store's STORE_* error.

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._link is not None:
            return self._link.run(fn)
        assert self._conn is not None
        return fn(self._conn)

    def _writer(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("store is closed")
        if self._conn is not None:
            return self._conn
        if self.readonly:
            raise StoreError(f"--db: {self.path} is open read-only", field="db",
                             code=ErrorCode.STORE_READ_ONLY)
        return self._open_writer()

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreError("store is closed")
            try:
                try:  # the first try without ``retrying``'s set-up: reads are rarely busy
                    return self._run(fn)
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc):
                        raise
                return retrying(lambda: self._run(fn), self._budget)
            except sqlite3.Error as exc:
                raise store_error(exc, self.path) from exc

    def _write(self, fn: Callable[[sqlite3.Connection], T], *, synced: bool = True) -> T:
        """Run ``fn`` in a write transaction. ``synced=False``: in ``full``, this commit
        does not fsync the WAL (:func:`~claimfsm.state.sqlite.db.transaction`); it is
        durable once the next commit, checkpoint or :meth:`close` has synced it."""
        try:
            if self._batching:
                with self._lock:  # the batch's thread re-enters; others wait for its end
                    if self._batching:
                        return savepoint(self._writer(), fn)
            if self.durability == "group":
                with self._lock:
                    self._writer()
                assert self._group is not None
                return self._group.submit(fn)
            with self._lock, self._queue:
                conn = self._writer()
                if synced or self.durability != "full" or not self._wal:
                    return transaction(conn, fn, self._budget)
                self._unsynced = True
                return transaction(conn, fn, self._budget, synced=False)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from exc

    def _write_one(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn``, which issues exactly one writing statement, in autocommit: SQLite
        makes that statement its own transaction (no BEGIN/COMMIT round trips).
        """
        if self._batching:
            return self._write(fn)
        with self._lock, self._queue:
            try:
                conn = self._writer()
                try:  # the first try without ``retrying``'s set-up: rarely busy in WAL mode
                    return fn(conn)
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc):
                        raise
                return retrying(lambda: fn(conn), self._budget)
            except sqlite3.Error as exc:
                raise store_error(exc, self.path) from exc

    @contextmanager
    def batch(self) -> Iterator[object]:
        """Writes in one transaction (state/sqlite/batch.py); a batch inside a batch is
        part of it. If the batch fails, the revisions it committed are forgotten by the
        caches too (none of them exists)."""
        with self._lock:
            if self._batching:
                yield self
                return
            try:
                conn = self._writer()
                with self._queue:
                    begin(conn, self._budget)
                    self._batching = True
                    try:
                        yield self
                    except BaseException:
                        self._batching = False
                        self._forget()
                        end(conn, ok=False)
                        raise
                    self._batching = False
                    try:
                        end(conn, ok=True)
                    except BaseException:
                        self._forget()
                        end(conn, ok=False)
                        raise
            except sqlite3.Error as exc:
                raise store_error(exc, self.path) from exc

    def _forget(self) -> None:
        self._entries.clear()
        self._ids.clear()
        self._shared.clear()
        self._known.clear()

    def clear_cache(self) -> None:
        """Forget decoded revisions and blobs (the next reads decode from the file)."""
        self._entries.clear()
        self._blobs.clear()

    def close(self) -> None:
        """Finish queued group commits and close the connections (idempotent)."""
        if self._group is not None:
            self._group.close()
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    if self._unsynced:
                        sync_wal(self.path)
                finally:
                    if self._conn is not None:
                        self._conn.close()
                if self._link is not None:
                    self._link.close()
                if isinstance(self._queue, WriterQueue):
                    self._queue.close()
