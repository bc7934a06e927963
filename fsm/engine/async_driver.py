"""The driver for asyncio applications: ``await driver.astep(sid)``, ``await
driver.arun(sid)``.

:class:`AsyncDriver` wraps a sync :class:`~claimfsm.engine.driver.Driver` and an
:class:`~claimfsm.state.aio.AsyncStore` over the same rows. A step is the sync driver's
step cut at its commit: the head is read and the revision committed (compare-and-set) on
the event loop through the async store; everything between (the version check, the
bound skill, its tool calls, the envelope's checks and the new state) runs on a worker
thread. Skills are CPU-bound pure functions taking 1 to 100 ms, and their tools may wait
on HTTP: on the loop they would stall every other request of the application for that
long, so they never run there. The revision built is the sync driver's, byte for byte
(the same code builds it): a session stepped here and one stepped by ``claimfsm step``
have identical revisions, events and hashes.

A cancelled ``astep`` commits nothing if it is cancelled before its commit is sent; a
commit already sent lands whole or not at all (the store's statement or transaction).
Either way the store stays at a consistent revision and the next step starts from the
head it finds. With a step observer (``Driver(observer=...)``: traces, ``/metrics``) the
observer wraps the step on the worker thread, as in the sync driver, and the commit is
handed to the loop from there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from typing import Any

from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.engine.limits import seconds_left
from claimfsm.engine.people import check_actor
from claimfsm.engine.step import iso
from claimfsm.state.aio import AsyncStore
from claimfsm.state.errors import RevConflict
from claimfsm.state.holds import HOLD_KEY, hold_of
from claimfsm.state.model import Revision

__all__ = ["AsyncDriver"]

_Built = tuple[StepResult, Revision | None, bool]


class AsyncDriver:
    """Runs the sessions of ``driver``'s machine from coroutines; ``store`` is the async
    store over ``driver.store``'s rows, ``executor`` the threads skills run on (``None``:
    the event loop's default executor), ``sleep`` how a retry waits (tests inject it)."""

    def __init__(self, driver: Driver, store: AsyncStore, *, executor: Executor | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        if store.sync is not driver.store:
            raise ValueError("the async store must serve the driver's own store")
        self.driver = driver
        self.store = store
        self.executor = executor
        self.sleep = sleep or asyncio.sleep

    async def _thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, fn, *args)

    # -- sessions -------------------------------------------------------------------------

    async def astart(self, claim: str, *, sid: str | None = None,
                     config: Mapping[str, Any] | None = None,
                     actor: str | None = None) -> Revision:
        """:meth:`Driver.start <claimfsm.engine.driver.Driver.start>`: revision 0 is built
        as the sync driver builds it and created through the async store."""
        made: list[Revision] = []

        def capture(first: Revision) -> None:
            # The sync start, stopped before its store call: revision 0 is only built.
            made.append(first)
            raise _Captured("revision 0 built")

        with contextlib.suppress(_Captured):
            await self._thread(lambda: self.driver.start(claim, sid=sid, config=config,
                                                         before_create=capture, actor=actor))
        first = made[0]
        created = await self.store.create(first)
        self.driver._remember(first.sid, 0)
        return created

    async def astep(self, sid: str, *, actor: str | None = None) -> StepResult:
        """Fire one transition of ``sid``: as :meth:`Driver.step
        <claimfsm.engine.driver.Driver.step>`, with the same result (and ``actor``
        recorded the same way)."""
        if actor is not None:
            check_actor(actor)
        return await self._astep(await self.store.head(sid), actor)

    async def arun(self, sid: str, *, max_steps: int = 1000,
                   actor: str | None = None) -> Revision:
        """Step until a final state, an uncommitted failure, or ``max_steps``, as
        :meth:`Driver.run <claimfsm.engine.driver.Driver.run>` does (a retry's wait is an
        ``await``, never past the session's deadline; each step records ``actor``)."""
        if actor is not None:
            check_actor(actor)
        driver = self.driver
        finals = driver.definition.finals
        head = await self.store.head(sid)
        fresh = True
        for _ in range(max_steps):
            if head.fsm in finals:
                return head
            if head.state.runtime and HOLD_KEY in head.state.runtime and hold_of(head.state):
                return head
            if head.state.retry is not None:
                wait = driver._retry_wait(head)
                left = seconds_left(head.state, driver.clock.now()) if wait > 0 else None
                if left is not None:
                    wait = min(wait, max(0.0, left))
                if wait > 0:
                    await self.sleep(wait)
            result = await self._astep(head, actor)
            if result.revision is not None:
                head, fresh = result.revision, False
            elif result.lost_race and not fresh:
                head, fresh = await self.store.head(sid), True
            else:
                return await self.store.head(sid)
        return await self.store.head(sid)

    async def arollback(self, sid: str, to: int, *, reopen: bool = False,
                        actor: str | None = None) -> Revision:
        """:meth:`Driver.rollback <claimfsm.engine.driver.Driver.rollback>` on a worker
        thread (it reads the revision it rewinds to from the sync store)."""
        result: Revision = await self._thread(
            lambda: self.driver.rollback(sid, to, reopen=reopen, actor=actor))
        return result

    async def afork(self, sid: str, at: int, new_sid: str | None = None, *,
                    actor: str | None = None) -> Revision:
        """A new session whose history is ``sid``'s up to revision ``at``, then its own
        revision naming its parent (and ``actor`` when given: :meth:`Driver.fork
        <claimfsm.engine.driver.Driver.fork>`); returns that revision."""
        from claimfsm.engine.lineage import fork_revision  # loads when forking

        if actor is not None:
            check_actor(actor)

        def own(copy: Revision) -> Revision:
            return fork_revision(copy, sid, iso(self.driver.clock.now()), actor=actor)

        # The copy and the fork's own revision land as one commit (StateStore.fork).
        return await self.store.fork(sid, at, new_sid or self.driver.new_sid(), then=own)

    # -- one step -------------------------------------------------------------------------

    async def _astep(self, head: Revision, actor: str | None = None) -> StepResult:
        driver = self.driver
        if driver.observer is not None:
            return await self._observed(head, actor)
        result, rev, ours = await self._thread(self._build, head, actor)
        if rev is None:
            return driver._report(result) if ours else result
        return await self._commit(result, rev, head.rev)

    async def _commit(self, result: StepResult, rev: Revision, expected: int) -> StepResult:
        driver = self.driver
        try:
            result.revision = await self.store.commit(rev, expected_rev=expected)
        except RevConflict as exc:
            return driver._lost(result, exc)
        return driver._landed(result, rev)

    async def _observed(self, head: Revision, actor: str | None = None) -> StepResult:
        # The observer wraps the whole step (its span, its timer) on the worker thread;
        # the commit inside it is still the async store's, run on the loop meanwhile.
        driver, loop = self.driver, asyncio.get_running_loop()
        observer = driver.observer
        assert observer is not None

        def fire(at: Revision) -> StepResult:
            result, rev, ours = self._build(at, actor)
            if rev is None:
                return driver._report(result) if ours else result
            done = asyncio.run_coroutine_threadsafe(self._commit(result, rev, at.rev), loop)
            return done.result()

        result: StepResult = await self._thread(observer.step, head, fire)
        return result

    def _build(self, head: Revision, actor: str | None = None) -> _Built:
        # On a worker thread: the version check and the step up to its commit.
        driver = self.driver
        other = driver._other_version(head, actor)
        if other is not None:  # stepped (and reported) by the driver of its version
            return other, None, False
        result, rev = driver._build(head, actor)
        return result, rev, True


class _Captured(ClaimFsmError):
    """Revision 0 was built: stop the sync start before its store call (control flow
    inside ``astart``, never raised out of it)."""

    code = ErrorCode.INTERNAL
