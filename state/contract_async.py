"""A reusable conformance suite for :class:`claimfsm.state.aio.AsyncStore` backends.

Subclass :class:`AsyncStoreContract` and provide ``fresh()``, a coroutine opening a
fresh, empty async store, and optionally ``reopen(store)``, one opening a second async
store on the same rows with cold caches (an autouse fixture may prepare what they need:
a folder, a server). Each test runs on a new event loop with ``asyncio.run`` (every
store is opened and closed inside it), so no asyncio plugin for pytest is needed. Needs
pytest, so it is not imported by ``state/__init__``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
import pytest

from claimfsm.state.aio import AsyncStore
from claimfsm.state.contract import make_revision, make_state, rich_state
from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
from claimfsm.state.lineage import FORKED
from claimfsm.state.model import Revision

__all__ = ["AsyncStoreContract"]


def _dump(revisions: Any) -> bytes:
    return orjson.dumps([r.model_dump(mode="json") for r in revisions])


async def chain(store: AsyncStore, sid: str, n: int, big: bool = False) -> list[Revision]:
    """Create ``sid`` and commit ``n`` more revisions, each changing the state."""
    state = rich_state(sid) if big else make_state(sid)
    out = [await store.create(make_revision(sid, 0, state))]
    for rev in range(1, n + 1):
        state = state.model_copy(update={"rounds": rev, "steps": [*state.steps, {"n": rev}]})
        out.append(await store.commit(make_revision(sid, rev, state), expected_rev=rev - 1))
    return out


class AsyncStoreContract:
    """Behaviour every :class:`AsyncStore` must show (each its sync store's)."""

    async def fresh(self) -> AsyncStore:
        """A fresh, empty async store (subclasses provide it)."""
        raise NotImplementedError("subclasses provide fresh()")

    async def reopen(self, store: AsyncStore) -> AsyncStore:
        """A second async store on ``store``'s rows with cold caches (default: itself;
        one that is not ``store`` is closed by the test)."""
        return store

    def run(self, body: Callable[[AsyncStore], Coroutine[Any, Any, None]]) -> None:
        """``body(store)`` on a new event loop, ``store`` fresh and closed afterwards."""
        async def go() -> None:
            store = await self.fresh()
            self._views: list[AsyncStore] = []
            try:
                await body(store)
            finally:
                for view in self._views:
                    await view.aclose()
                await store.aclose()

        asyncio.run(go())

    async def cold(self, store: AsyncStore) -> AsyncStore:
        """:meth:`reopen`, closed when the test ends."""
        view = await self.reopen(store)
        if view is not store:
            self._views.append(view)
        return view

    def test_create_commit_head_history(self) -> None:
        async def go(astore: AsyncStore) -> None:
            made = await chain(astore, "s1", 9, big=True)
            assert await astore.head("s1") == made[-1]
            assert _dump(await astore.history("s1")) == _dump(made)
            cold = await self.cold(astore)
            assert _dump(await cold.history("s1")) == _dump(made)
            assert await cold.get("s1", 4) == made[4]
            assert await cold.head("s1") == made[-1]
        self.run(go)

    def test_async_and_sync_read_each_others_rows(self) -> None:
        async def go(astore: AsyncStore) -> None:
            made = await chain(astore, "s1", 3, big=True)
            assert _dump(astore.sync.history("s1")) == _dump(made)
            nxt = made[-1].state.model_copy(update={"rounds": 99})
            astore.sync.commit(make_revision("s1", 4, nxt), expected_rev=3)
            assert (await astore.head("s1")).state.rounds == 99
        self.run(go)

    def test_conflicts(self) -> None:
        async def go(astore: AsyncStore) -> None:
            await chain(astore, "s1", 2)
            with pytest.raises(RevConflict):
                await astore.create(make_revision("s1", 0))
            for revision, expected in ((make_revision("s1", 2), 1),
                                       (make_revision("s1", 4, parent_rev=2), 2),
                                       (make_revision("s1", 3, parent_rev=1), 2),
                                       (make_revision("s1", 7), 6)):
                with pytest.raises(RevConflict) as info:
                    await astore.commit(revision, expected_rev=expected)
                assert info.value.code == "REV_CONFLICT"
            assert (await astore.head("s1")).rev == 2
        self.run(go)

    def test_concurrent_commits_from_one_head_one_wins(self) -> None:
        async def go(astore: AsyncStore) -> None:
            await chain(astore, "s1", 1)
            tries = [make_revision("s1", 2, make_state("s1", claim=f"writer {i}"))
                     for i in range(6)]
            done = await asyncio.gather(*(astore.commit(r, expected_rev=1) for r in tries),
                                        return_exceptions=True)
            won = [d for d in done if isinstance(d, Revision)]
            assert len(won) == 1
            assert all(isinstance(d, RevConflict) for d in done if d not in won)
            cold = await self.cold(astore)
            assert (await cold.head("s1")).state.claim == won[0].state.claim
            assert astore.sync.verify_chain("s1").ok
        self.run(go)

    def test_unknowns(self) -> None:
        async def go(astore: AsyncStore) -> None:
            calls: list[Callable[[], Awaitable[object]]] = [
                lambda: astore.head("nope"), lambda: astore.get("nope", 0),
                lambda: astore.history("nope"), lambda: astore.fork("nope", 0, "x"),
                lambda: astore.commit(make_revision("nope", 1), expected_rev=0)]
            for call in calls:
                with pytest.raises(UnknownSession):
                    await call()
            await chain(astore, "s1", 1)
            for rev in (2, -1):
                with pytest.raises(UnknownRevision):
                    await astore.get("s1", rev)
        self.run(go)

    def test_sessions_and_fork(self) -> None:
        async def go(astore: AsyncStore) -> None:
            made = await chain(astore, "b", 3)
            await chain(astore, "a", 0)
            assert list(await astore.sessions()) == ["b", "a"]
            head = await astore.fork("b", 2, "c")
            assert head.rev == 2 and head.sid == "c" and head.state.sid == "c"
            assert [r.state.rounds for r in await astore.history("c")] == [
                r.state.rounds for r in made[:3]]
            assert list(await astore.sessions()) == ["b", "a", "c"]
            assert (await astore.head("b")).rev == 3
        self.run(go)

    def test_fork_with_its_own_revision(self) -> None:
        async def go(astore: AsyncStore) -> None:
            await chain(astore, "b", 3)
            ts = "2026-02-01T00:00:00Z"
            head = await astore.fork("b", 2, "c",
                                     then=lambda copy: forked_revision(copy, "b", ts))
            assert head.rev == 3 and head.sid == "c" and head.events[0]["type"] == FORKED
            cold = await self.cold(astore)
            assert _dump([await cold.head("c")]) == _dump([head])
            assert astore.sync.forks("b") == [{"sid": "c", "rev": 2, "at": ts}]
            with pytest.raises(RevConflict):  # the name is taken: nothing changes
                await astore.fork("b", 1, "c", then=lambda copy: forked_revision(copy, "b", ts))
            assert (await astore.head("c")).rev == 3
        self.run(go)

    def test_cancelled_commits_leave_a_consistent_head(self) -> None:
        async def go(astore: AsyncStore) -> None:
            await chain(astore, "s1", 0)
            for i in range(12):
                head = await astore.head("s1")
                nxt = make_revision("s1", head.rev + 1, make_state("s1", rounds=i))
                task = asyncio.ensure_future(astore.commit(nxt, expected_rev=head.rev))
                for _ in range(i % 4):
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                after = await astore.head("s1")
                assert after.rev in (head.rev, head.rev + 1)
                assert astore.sync.verify_chain("s1").ok
            cold = await self.cold(astore)
            assert _dump(await cold.history("s1")) == _dump(await astore.history("s1"))
        self.run(go)
