"""The server store for asyncio: the step's calls over psycopg's ``AsyncConnection``.

:class:`AsyncPostgresStore` runs ``head``, ``get``, ``history``, ``sessions``, ``create``
and ``commit`` as statements on its own async connection, so a coroutine waiting for the
server leaves the event loop free. It shares the row format, the encoder, the statements
and the caches of the sync :class:`~claimfsm.state.postgres.store.PostgresStore` it is
opened over (``sync``): rows, hashes and errors are the sync store's exactly. ``fork``
(a multi-statement transaction, rare) runs the sync store's on a worker thread.

A statement cancelled mid-flight (its coroutine cancelled) either committed whole or not
at all: each write is one autocommit statement. The connection it ran on is then closed
and the next call opens a fresh one, so no half-read answer is ever taken for another's.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.state.aio import AsyncStore
from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision
from claimfsm.state.holds import timer_of
from claimfsm.state.model import Revision
from claimfsm.state.postgres.core import SESSION, inflated
from claimfsm.state.postgres.db import ROWS, StoreUnavailable, redact, store_error
from claimfsm.state.postgres.store import HEAD_OF, TIMER, PostgresStore
from claimfsm.state.sqlite.rows import Entry, Row
from claimfsm.state.store import StateStore

__all__ = ["AsyncPostgresStore"]

_BLOB = "SELECT z, data FROM st_blobs WHERE h = %s"
_ATTEMPTS = 5


class _BlobMissing(ClaimFsmError):
    """A blob the caches do not hold: fetched, then the rows decoded again (a signal
    inside decoding, never raised out of the store)."""

    code = ErrorCode.INTERNAL

    def __init__(self, digest: str) -> None:
        super().__init__(f"blob {digest[:12]} is not cached")
        self.digest = digest


class AsyncPostgresStore(AsyncStore):
    """See the module docstring; open with :meth:`open` (a new sync store beside it) or
    :meth:`over` (an open one)."""

    def __init__(self, store: PostgresStore, url: str, connect_timeout: float = 10.0) -> None:
        self._store = store
        self._url = url
        self._timeout = connect_timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @classmethod
    async def open(cls, url: str, **options: Any) -> AsyncPostgresStore:
        """A sync :class:`PostgresStore` on ``url`` (``options`` as it takes them; the
        schema is checked or created there, on a worker thread) and this beside it."""
        store = await asyncio.to_thread(PostgresStore, url, **options)
        return await cls.over(store)

    @classmethod
    async def over(cls, store: StateStore) -> AsyncPostgresStore:
        """This over the open ``store``, on the URL it was opened with; connects now, so
        a server that is down fails here."""
        if not isinstance(store, PostgresStore):
            raise TypeError(f"AsyncPostgresStore needs a PostgresStore, not {type(store)}")
        out = cls(store, store._dsn)
        await out.ready()
        return out

    async def ready(self) -> None:
        """Connect now (otherwise the first call does)."""
        await self._query("SELECT 1")

    @property
    def sync(self) -> PostgresStore:
        """The sync store over the same rows and caches."""
        return self._store

    # -- plumbing ---------------------------------------------------------------------

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)))
            except psycopg.Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else "error"
                raise StoreUnavailable(f"cannot connect to {redact(self._url)}: {first}",
                                       field="db") from exc
        return self._conn

    def _bind(self) -> None:
        # A connection and a lock serve the loop they were made on; on another loop (a
        # test client's, a second asyncio.run) this store starts over with new ones.
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._conn, self._lock = loop, None, asyncio.Lock()

    async def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._bind()
        for attempt in range(_ATTEMPTS):
            async with self._lock:
                if self._closed:
                    raise StoreError("store is closed")
                conn = await self._connection()
                try:
                    cur = await conn.execute(sql, params, binary=True)
                    return await cur.fetchall()
                except psycopg.Error as exc:
                    error = store_error(exc, attempt, _ATTEMPTS)
                    if error is not None:
                        raise error from exc
                except asyncio.CancelledError:
                    # The answer may still be on its way: nobody else may read it.
                    await asyncio.shield(conn.close())
                    raise
        raise AssertionError("unreachable")

    async def _session(self, sid: str) -> tuple[int, int]:
        return self._store._known_session(sid, await self._query(SESSION, (sid,)))

    async def _rows(self, session: int, first: int, last: int) -> list[Row]:
        return inflated(await self._query(ROWS, (session, first, last)))

    async def _decode(self, sid: str, rows: list[Row], *, every: bool) -> list[Entry]:
        store = self._store

        def cached(digest: str) -> bytes:
            raw = store._blobs.get(digest)
            if raw is None:
                raise _BlobMissing(digest)
            return raw

        while True:
            try:
                return store._decode_with(sid, rows, cached, every=every)
            except _BlobMissing as missing:  # fetched here, then decoded again
                found = await self._query(_BLOB, (bytes.fromhex(missing.digest),))
                store._blob_found(missing.digest, found)

    async def _entry(self, sid: str, rev: int, session: int | None = None) -> Entry:
        cached = self._store._entries.get((sid, rev))
        if cached is not None:
            return cached
        if session is None:
            session = self._store._ids.get(sid) or (await self._session(sid))[0]
        first = self._store._first_row(sid, rev)
        rows = await self._rows(session, first, rev)
        if first and (not rows or rows[0][2] != 0):
            rows = await self._rows(session, 0, rev)  # written under another snapshot policy
        rows = self._store._from_snapshot(sid, rev, rows)
        return (await self._decode(sid, rows, every=False))[-1]

    # -- the contract -----------------------------------------------------------------

    async def create(self, first: Revision) -> Revision:
        """Start a session with revision 0; :class:`RevConflict` if it exists."""
        sql, params, encoded = self._store._create_plan(first)
        rows = await self._query(sql, params)
        if not rows:
            raise RevConflict(f"session {first.sid!r} already exists", sid=first.sid)
        timer = timer_of(first.state)
        if timer is not None:  # paused before its first state: listed as waiting
            await self._query(TIMER, (rows[0][0], timer[0], int(timer[1])))
        self._store._created(first.sid, rows[0][0], encoded)
        return first

    async def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """The sync store's compare-and-set statement, awaited."""
        store, sid = self._store, revision.sid
        bad = store._bad_move(revision, expected_rev)
        if bad is not None:
            await self._session(sid)
            raise bad
        session = store._ids.get(sid) or (await self._session(sid))[0]
        try:
            parent = await self._entry(sid, expected_rev, session)
        except UnknownRevision as exc:
            raise RevConflict(f"expected_rev {expected_rev} is ahead of the head", sid=sid,
                              expected=expected_rev) from exc
        sql, params, encoded = store._commit_plan(revision, expected_rev, session, parent)
        if not await self._query(sql, params):
            store._commit_lost(sid, expected_rev, await self._query(HEAD_OF, (session,)))
        store._remember(sid, encoded)
        return revision

    async def head(self, sid: str) -> Revision:
        """The newest revision (the head is always read from the server)."""
        session, head = await self._session(sid)
        return (await self._entry(sid, head, session)).revision

    async def get(self, sid: str, rev: int) -> Revision:
        """One revision (revisions never change: the cache is always valid)."""
        return (await self._entry(sid, rev)).revision

    async def history(self, sid: str) -> Sequence[Revision]:
        """Every revision up to the current head, oldest first."""
        session, head = await self._session(sid)
        entries = self._store._entries
        cached = [entries.get((sid, rev)) for rev in range(head + 1)]
        if all(entry is not None for entry in cached):
            return [entry.revision for entry in cached if entry is not None]
        rows = await self._rows(session, 0, head)
        return [e.revision for e in await self._decode(sid, rows, every=True)]

    async def sessions(self) -> Sequence[str]:
        """Session ids in creation order."""
        rows = await self._query("SELECT sid FROM st_sessions WHERE head >= 0 ORDER BY id")
        return [sid for (sid,) in rows]

    async def fork(self, sid: str, at: int, new_sid: str, *,
                   then: Callable[[Revision], Revision] | None = None) -> Revision:
        """The sync store's fork (one transaction of several statements, the fork's own
        revision from ``then`` in it), on a thread."""
        return await asyncio.to_thread(functools.partial(self._store.fork, then=then), sid,
                                       at, new_sid)

    async def aclose(self) -> None:
        """Close the async connection and the sync store (idempotent)."""
        await self.adetach()
        await asyncio.to_thread(self._store.close)

    async def adetach(self) -> None:
        """Close the async connection only (the sync store stays open)."""
        self._bind()
        async with self._lock:
            self._closed = True
            if self._conn is not None:
                await self._conn.close()

