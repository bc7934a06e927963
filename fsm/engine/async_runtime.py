"""The engine for asyncio applications: :class:`AsyncEngine`.

``engine = await AsyncEngine.open(db, config=EngineConfig(...))`` opens what
:meth:`Engine.open <claimfsm.engine.runtime.Engine.open>` opens (on a worker thread: it
reads files and may seed the index) and puts an async store beside its store: psycopg's
``AsyncConnection`` for a ``postgresql://`` URL, a dedicated store thread for SQLite and
memory (:func:`claimfsm.state.aio.async_store`). Its methods are the sync engine's and
driver's with an ``a`` prefix (``astart``, ``astep``, ``arun``, ``arollback``, ``afork``,
``ahead``, ``ahistory``, ``aclose``); ``engine.driver`` is the
:class:`~claimfsm.engine.async_driver.AsyncDriver` and ``engine.sync`` the sync
:class:`~claimfsm.engine.runtime.Engine` for anything else, to be called off the loop
(:meth:`AsyncEngine.call`). See docs/async.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from claimfsm.engine.async_driver import AsyncDriver
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import StepResult
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.state.aio import AsyncStore, async_store
from claimfsm.state.model import Revision
from claimfsm.state.open import Location, locate

__all__ = ["AsyncEngine"]

T = TypeVar("T")


@dataclass
class AsyncEngine:
    """A sync :class:`Engine` (``sync``), the async store over its store's rows
    (``store``) and the async driver that joins them (``driver``)."""

    sync: Engine
    store: AsyncStore
    driver: AsyncDriver

    @classmethod
    async def open(cls, db: str | Path | Location | None, *, config: EngineConfig | None = None,
                   executor: Executor | None = None) -> AsyncEngine:
        """Open ``db`` as :meth:`Engine.open <claimfsm.engine.runtime.Engine.open>` does
        (a SQLite file, a ``postgresql://`` URL, ``None`` for memory); ``executor``: the
        threads skills run on (``None``: the loop's default executor)."""
        where = None if db is None else locate(db)
        engine = await asyncio.to_thread(Engine.open, where, config=config)
        try:
            store = await async_store(engine.store)
        except BaseException:
            await asyncio.to_thread(engine.close)
            raise
        return cls.over(engine, store, executor=executor)

    @classmethod
    def over(cls, engine: Engine, store: AsyncStore, *,
             executor: Executor | None = None) -> AsyncEngine:
        """An async engine over an open ``engine`` and the async store of its store."""
        return cls(engine, store, AsyncDriver(engine.driver, store, executor=executor))

    async def call(self, fn: Callable[..., T], /, *args: Any) -> T:
        """``fn(*args)`` on a worker thread (a sync operation of :attr:`sync`: listing,
        export, deletion, people's edits)."""
        return await asyncio.to_thread(fn, *args)

    async def astart(self, claim: str, *, config: Mapping[str, Any] | None = None,
                     profile: Profile | None = None, actor: str | None = None) -> Revision:
        """:meth:`Engine.start <claimfsm.engine.runtime.Engine.start>`: this engine's
        profile, or ``profile`` for this session only, under ``config``."""
        settings = await self.call(self.sync.session_config, config, profile)
        return await self.driver.astart(claim, config=settings, actor=actor)

    async def astep(self, sid: str, *, actor: str | None = None) -> StepResult:
        """Fire one transition (:meth:`AsyncDriver.astep`; ``actor``: who asked for
        it, recorded in the revision it commits)."""
        return await self.driver.astep(sid, actor=actor)

    async def arun(self, sid: str, *, max_steps: int = 1000,
                   actor: str | None = None) -> Revision:
        """Step to a final state or a stop (:meth:`AsyncDriver.arun`; each step records
        ``actor``)."""
        return await self.driver.arun(sid, max_steps=max_steps, actor=actor)

    async def arollback(self, sid: str, to: int, *, reopen: bool = False,
                        actor: str | None = None) -> Revision:
        """Rewind to revision ``to`` (:meth:`AsyncDriver.arollback`)."""
        return await self.driver.arollback(sid, to, reopen=reopen, actor=actor)

    async def afork(self, sid: str, at: int, new_sid: str | None = None, *,
                    actor: str | None = None) -> Revision:
        """A copy of ``sid`` up to revision ``at`` (:meth:`AsyncDriver.afork`; its own
        revision records ``actor``)."""
        return await self.driver.afork(sid, at, new_sid, actor=actor)

    async def ahead(self, sid: str) -> Revision:
        """The session's newest revision."""
        return await self.store.head(sid)

    async def ahistory(self, sid: str) -> Sequence[Revision]:
        """Every revision of the session, oldest first."""
        return await self.store.history(sid)

    async def aclose(self) -> None:
        """Close the async store (and with it the store), then the evidence index."""
        try:
            await self.store.aclose()
        finally:
            await asyncio.to_thread(self.sync.index.close)

    async def __aenter__(self) -> AsyncEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
