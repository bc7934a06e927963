"""The store contract for asyncio: :class:`AsyncStore`, and :class:`ThreadedStore`, which
serves it from any sync :class:`~claimfsm.state.store.StateStore` on one thread of its own.

An async store answers the calls a step makes (``head``, ``commit``) and the session
operations an application awaits (``create``, ``get``, ``history``, ``sessions``,
``fork``) with the same results and the same errors as its sync store, whose rows it
shares: a revision committed through one reads back through the other. ``sync`` is that
store, for everything else (listing, deletion, people's edits), to be called off the
event loop. PostgreSQL has its own, over psycopg's async connection
(:class:`claimfsm.state.postgres.aio.AsyncPostgresStore`); :func:`async_store` and
:func:`async_store_of` pick.
"""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore

__all__ = ["AsyncStore", "ThreadedStore", "async_store", "async_store_of"]

T = TypeVar("T")


class AsyncStore(ABC):
    """The revision store's contract as coroutines (see :class:`StateStore` for each
    call's meaning and errors: :class:`~claimfsm.state.errors.RevConflict`,
    :class:`~claimfsm.state.errors.UnknownSession`, ...)."""

    @property
    @abstractmethod
    def sync(self) -> StateStore:
        """The sync store over the same rows (call it from a worker thread)."""

    @abstractmethod
    async def create(self, first: Revision) -> Revision:
        """Start a session with revision 0 (:meth:`StateStore.create`)."""

    @abstractmethod
    async def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Compare-and-set append (:meth:`StateStore.commit`). A cancelled commit either
        landed whole or not at all; read the head to know which."""

    @abstractmethod
    async def head(self, sid: str) -> Revision:
        """The newest revision (:meth:`StateStore.head`)."""

    @abstractmethod
    async def get(self, sid: str, rev: int) -> Revision:
        """One revision (:meth:`StateStore.get`)."""

    @abstractmethod
    async def history(self, sid: str) -> Sequence[Revision]:
        """Every revision, oldest first (:meth:`StateStore.history`)."""

    @abstractmethod
    async def sessions(self) -> Sequence[str]:
        """Every session id, in creation order (:meth:`StateStore.sessions`)."""

    @abstractmethod
    async def fork(self, sid: str, at: int, new_sid: str, *,
                   then: Callable[[Revision], Revision] | None = None) -> Revision:
        """Copy revisions ``0..at`` to ``new_sid``, with ``then`` the fork's own revision
        in the same commit (:meth:`StateStore.fork`)."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release what this async store holds and close :attr:`sync`."""

    async def ready(self) -> None:  # noqa: B027 - optional hook: a connection to open
        """Open what the first call would (a server connection), so it fails here."""

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class ThreadedStore(AsyncStore):
    """Every call runs on one dedicated thread of this store's, so the event loop never
    waits on SQLite's locks, fsyncs or group commits, and calls reach the store one at a
    time in the order they were awaited. A cancelled call's coroutine stops waiting; the
    call itself finishes on the thread (a commit lands whole or not at all)."""

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claimfsm-store")

    @property
    def sync(self) -> StateStore:
        """The wrapped store."""
        return self._store

    async def call(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> T:
        """``fn(*args, **kwargs)`` on the store's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(fn, *args, **kwargs))

    async def create(self, first: Revision) -> Revision:
        """On the store's thread."""
        return await self.call(self._store.create, first)

    async def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """On the store's thread."""
        return await self.call(self._store.commit, revision, expected_rev=expected_rev)

    async def head(self, sid: str) -> Revision:
        """On the store's thread."""
        return await self.call(self._store.head, sid)

    async def get(self, sid: str, rev: int) -> Revision:
        """On the store's thread."""
        return await self.call(self._store.get, sid, rev)

    async def history(self, sid: str) -> Sequence[Revision]:
        """On the store's thread."""
        return await self.call(self._store.history, sid)

    async def sessions(self) -> Sequence[str]:
        """On the store's thread."""
        return await self.call(self._store.sessions)

    async def fork(self, sid: str, at: int, new_sid: str, *,
                   then: Callable[[Revision], Revision] | None = None) -> Revision:
        """On the store's thread (``then`` too)."""
        return await self.call(self._store.fork, sid, at, new_sid, then=then)

    async def aclose(self) -> None:
        """Close the store on its thread, then stop the thread."""
        try:
            await self.call(self._store.close)
        finally:
            self._thread.shutdown(wait=False)


def async_store_of(store: StateStore) -> AsyncStore:
    """The async store over ``store``'s rows, made without awaiting (a PostgreSQL one
    connects on its first call): for a
    :class:`~claimfsm.state.postgres.store.PostgresStore` one on psycopg's async
    connection, otherwise a :class:`ThreadedStore`."""
    dsn = getattr(store, "_dsn", None)  # a PostgresStore's URL as it was given
    if isinstance(dsn, str):
        from claimfsm.state.postgres.aio import AsyncPostgresStore  # only with a server

        return AsyncPostgresStore(store, dsn)  # type: ignore[arg-type]
    return ThreadedStore(store)


async def async_store(store: StateStore) -> AsyncStore:
    """:func:`async_store_of`, connected now: a server that is down fails here."""
    out = async_store_of(store)
    await out.ready()
    return out
