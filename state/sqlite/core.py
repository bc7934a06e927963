"""The plumbing under :class:`claimfsm.state.sqlite.store.SQLiteStore`: options, connections, the
read and write paths, the decoded-revision and blob caches.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from claimfsm._base.errors import BadInput, ErrorCode
from claimfsm._base.sqlite_read import ReadOnlyLink, read_mode
from claimfsm.state import codec
from claimfsm.state.codec import CodecError
from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
from claimfsm.state.sqlite.batch import begin, end, savepoint
from claimfsm.state.sqlite.db import (
    DURABILITY_MODES,
    HEAD,
    CorruptStore,
    Durability,
    GroupCommitter,
    connect,
    init_schema,
    is_busy,
    retrying,
    sync_wal,
    transaction,
)
from claimfsm.state.sqlite.decode import ChainDecoder, decode_rows
from claimfsm.state.sqlite.lru import Lru
from claimfsm.state.sqlite.probe import before_writing, check_file, store_error
from claimfsm.state.sqlite.read import AGAIN, CHAIN_ROWS, READ_ROWS, read_revision
from claimfsm.state.sqlite.rows import Encoded, Entry, Row, inflate
from claimfsm.state.sqlite.shares import Share, load_shares, restamp, segment_of
from claimfsm.state.sqlite.writers import WriterQueue

__all__ = ["INSERT_BLOB", "INSERT_ROW", "SQLiteCore", "new_session", "taken"]

T = TypeVar("T")
INSERT_ROW = (
    "INSERT INTO st_revisions (k, parent_rev, kind, fsm, skill, ts, body, extra, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_BLOB = "INSERT OR IGNORE INTO st_blobs (h, z, data) VALUES (?, ?, ?)"
#: Set a session's verdict label in the catalog (params: session id, label); see
#: state/sqlite/catalog.py.
LABEL = ("INSERT INTO st_catalog (id, verdict) VALUES (?, ?)"
         " ON CONFLICT (id) DO UPDATE SET verdict = excluded.verdict")
_CHAIN_RANGE = (
    "SELECT k & 4294967295, parent_rev, kind, fsm, skill, ts, body, extra, hash"
    " FROM st_revisions WHERE k BETWEEN ?1 AND ?2 ORDER BY k"
)
_MAX_REV = 0xFFFFFFFF
_HEAD_OF = f"SELECT {HEAD}"
_SESSION = (f"SELECT id, {HEAD.replace('?1', '(id << 32)')} FROM st_sessions"
            " WHERE sid = ?")


def taken(exc: sqlite3.IntegrityError) -> bool:
    """Whether ``exc`` is a key already taken (the compare-and-set lost), not another
    constraint."""
    return "UNIQUE constraint failed" in str(exc)


def new_session(c: sqlite3.Connection, sid: str, shares: str | None = None) -> int:
    """Add session ``sid`` (``shares``: a shared fork's segments,
    :func:`~claimfsm.state.sqlite.shares.dump_shares`); its number. ``sid`` is UNIQUE, so
    the insert itself says whether the session exists (:class:`RevConflict`)."""
    try:
        session = c.execute("INSERT INTO st_sessions (sid, shares) VALUES (?, ?)",
                            (sid, shares)).lastrowid
    except sqlite3.IntegrityError as exc:
        if not taken(exc):
            raise
        raise RevConflict(f"session {sid!r} already exists", sid=sid) from None
    assert session is not None
    return session


def _ignore(row: Row, entry: Entry) -> None:
    """Entries are cached by :meth:`SQLiteCore._decode` itself, sid checked first."""


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
        # The writer's cursor for :meth:`_all` (under ``_lock``): a cursor made per read
        # costs ~1.3k instructions of a cold read's ~150k.
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

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one reading statement (:meth:`_read`'s, with fewer layers on a
        store that holds its write connection)."""
        with self._lock:
            cursor = self._cursor
            if cursor is not None and self._link is None and not self._closed:
                try:
                    return cursor.execute(sql, params).fetchall()
                except sqlite3.Error:
                    pass  # run again below, where busy is retried and errors are mapped
        return self._read(lambda c: c.execute(sql, params).fetchall())

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

    def _session(self, sid: str) -> tuple[int, int]:
        """``(session number, head)``; raises :class:`UnknownSession`."""
        known = self._ids.get(sid)
        if known is not None:  # session numbers never change: seek the head by key
            found = self._read(lambda c: c.execute(_HEAD_OF, (known << 32,)).fetchone())
            if found[0] is not None:
                return known, found[0] & _MAX_REV
        row = self._read(lambda c: c.execute(_SESSION, (sid,)).fetchone())
        if row is None or row[1] is None:
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        self._ids[sid] = row[0]
        return row[0], row[1] & _MAX_REV

    def _fetch(self, digest: str) -> bytes:
        raw = self._blobs.get(digest)
        if raw is not None:
            return raw
        row = self._read(
            lambda c: c.execute(
                "SELECT z, data FROM st_blobs WHERE h=?", (bytes.fromhex(digest),)
            ).fetchone()
        )
        if row is None:
            raise CodecError(f"blob {digest[:12]} is missing")
        raw = codec.unpack_blob(row[0], row[1])
        if hashlib.sha256(raw).hexdigest() != digest:
            raise CodecError(f"blob {digest[:12]} does not match its hash")
        self._blobs.put(digest, raw)
        self._known.put(digest, True)
        return raw

    def _decode(
        self, sid: str, rows: list[Row], start: Entry | None = None, *, every: bool = True,
        first: int = 0,
    ) -> list[Entry]:
        """Entries for ``rows`` (all of them from revision ``first``, or with
        ``every=False`` only the last)."""
        decoder = ChainDecoder(sid) if start is None else ChainDecoder.resume(sid, start)
        out = decode_rows(sid, decoder, rows, self._fetch, _ignore, every=every, first=first)
        put = self._entries.put
        for i, entry in enumerate(out):
            if entry.revision.state.sid != sid:  # a shared prefix copied in by an erase
                out[i] = entry = restamp(entry, sid)
            put((sid, entry.revision.rev), entry)
        return out

    def _entry(self, sid: str, rev: int, session: int | None = None) -> Entry:
        entries = self._entries
        peek = entries.peek
        if peek((sid, rev)) is not None:
            cached = entries.get((sid, rev))
            if cached is not None:
                return cached
        if session is None:
            session = self._ids.get(sid) or self._session(sid)[0]
        if not 0 <= rev <= _MAX_REV:  # beyond it, keys would run into the next session
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        shared = self._shared.get(session)
        if shared:
            share = segment_of(shared, rev)
            if share is not None and share.src != session:  # its parent's row: no own read
                found = self._from_share(sid, rev, session)
                entries.put((sid, rev), found)
                return found
        base = session << 32
        if rev and entries.count():
            # Resume from a cached ancestor when one is near (a head that moved on, a
            # walk forward) instead of starting again at the snapshot.
            for back in range(rev - 1, max(-1, rev - self.snapshot_every - 1), -1):
                if peek((sid, back)) is not None:
                    start = entries.get((sid, back))
                    if start is not None:
                        try:
                            return self._resume(sid, rev, base, start)
                        except UnknownRevision:
                            break  # not in this session's rows: maybe its parent's
        target = base + rev
        try:
            entry = read_revision(sid, rev, target, self._all(READ_ROWS, (base, target)),
                                  self._fetch)
            if entry is AGAIN:
                entry = read_revision(sid, rev, target, self._all(CHAIN_ROWS, (base, target)),
                                      self._fetch)
        except (ValueError, TypeError, KeyError) as exc:  # CodecError, or rows of wrong types
            raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
        if not isinstance(entry, Entry):
            entry = self._from_share(sid, rev, session)
        elif entry.revision.state.sid != sid:  # a shared prefix copied in by an erase
            entry = restamp(entry, sid)
        entries.put((sid, rev), entry)
        return entry

    def _shares_of(self, session: int, fresh: bool = False) -> tuple[Share, ...]:
        """The segments session number ``session`` shares (``fresh``: read again, after
        another process erased a parent)."""
        known = None if fresh else self._shared.get(session)
        if known is None:
            try:
                known = self._read(lambda c: load_shares(c, session))
            except ValueError as exc:  # CodecError: the column was damaged
                raise CorruptStore(f"session number {session}: {exc}") from exc
            self._shared[session] = known
        return known

    def _from_share(self, sid: str, rev: int, session: int) -> Entry:
        """Revision ``rev`` of a fork that shares it with a parent, under the fork's sid."""
        for fresh in (False, True):
            share = segment_of(self._shares_of(session, fresh), rev)
            if share is None:
                break
            try:
                return restamp(self._entry(share.sid, rev, share.src), sid)
            except UnknownRevision:
                continue  # its parent erased since: the rows are the fork's own now
        raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)

    def _resume(self, sid: str, rev: int, base: int, start: Entry) -> Entry:
        bounds = (base + start.revision.rev + 1, base + rev)
        rows = inflate(self._read(lambda c: c.execute(_CHAIN_RANGE, bounds).fetchall()))
        if not rows or rows[-1][0] != rev:
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        return self._decode(sid, rows, start, every=False)[-1]

    def _new_blobs(self, encoded: Encoded) -> list[tuple[bytes, int, bytes]]:
        return [
            (bytes.fromhex(h), *codec.pack_blob(raw))
            for h, raw in encoded.blobs.items()
            if h not in self._known
        ]

    def _remember(self, sid: str, encoded: Encoded) -> None:
        self._entries.put((sid, encoded.row[0]), encoded.entry)
        if encoded.blobs:
            for digest in encoded.blobs:
                self._known.put(digest, True)

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
