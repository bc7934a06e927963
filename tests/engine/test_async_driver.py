"""The async driver and engine (fsm/engine/async_driver.py, async_runtime.py) on every
backend: the same claim gives the same revisions and hashes as the sync driver, two
coroutines stepping one session never both commit, and a cancelled step leaves the store
at a consistent revision."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.engine.async_runtime import AsyncEngine
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import Clock, FixedClock
from claimfsm.state.model import Revision, SessionState
from tests.support.pg import PgServer

CLAIM = "Global sea levels are rising because of climate change."


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str | None]]:
    """A factory of fresh databases of one backend (``None``: memory)."""
    if request.param == "memory":
        yield lambda: None
    elif request.param == "sqlite":
        names = iter(range(100))
        yield lambda: str(tmp_path / f"db{next(names)}.db")
    else:
        server: PgServer = request.getfixturevalue("pg_server")
        yield server.new_schema


def _config() -> EngineConfig:
    return EngineConfig(clock=FixedClock())


def _dump(revisions: Any) -> bytes:
    return orjson.dumps([r.model_dump(mode="json") for r in revisions])


def _hashes(engine: Engine, sid: str, n: int) -> list[str]:
    hashed = getattr(engine.store, "revision_hash", None)
    return [] if hashed is None else [hashed(sid, rev) for rev in range(n)]


def _sync_run(db: str | None) -> tuple[bytes, list[str], list[Any]]:
    with Engine.open(db, config=_config()) as engine:
        engine.driver.start(CLAIM, sid="s1", config=engine.session_config())
        steps = []
        while engine.store.head("s1").fsm not in engine.driver.definition.finals:
            steps.append(engine.driver.step("s1").envelope.to_dict())
        history = engine.store.history("s1")
        return _dump(history), _hashes(engine, "s1", len(history)), steps


def _gate(engine: AsyncEngine, gate: Callable[[], None]) -> None:
    """Call ``gate()`` on the worker thread at the start of every step's tools."""
    inner = engine.sync.driver.tools
    assert inner is not None

    def gated(state: SessionState, clock: Clock) -> Any:
        gate()
        return inner(state, clock)

    engine.sync.driver.tools = gated


def test_sync_and_async_give_identical_revisions_and_hashes(
        where: Callable[[], str | None]) -> None:
    want, hashes, steps = _sync_run(where())
    assert len(steps) >= 5

    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            await engine.driver.astart(CLAIM, sid="s1", config=engine.sync.session_config())
            got = []
            while (await engine.ahead("s1")).fsm not in engine.sync.driver.definition.finals:
                got.append((await engine.astep("s1")).envelope.to_dict())
            assert got == steps
            history = await engine.ahistory("s1")
            assert _dump(history) == want
            assert _hashes(engine.sync, "s1", len(history)) == hashes

    asyncio.run(go())


def test_arun_and_astart_match_run_and_start(where: Callable[[], str | None]) -> None:
    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            first = await engine.astart(CLAIM)
            done = await engine.arun(first.sid)
            assert done.fsm == "DONE" and done.state.verdict is not None
            history = await engine.ahistory(first.sid)
            assert [r.rev for r in history] == list(range(done.rev + 1))
            assert engine.sync.store.verify_chain(first.sid).ok
            with Engine.open(None, config=_config()) as sync:
                ref = sync.driver.run(sync.start(CLAIM).sid)
            assert done.state.verdict == ref.state.verdict and done.rev == ref.rev
            back = await engine.arollback(first.sid, 2)
            assert back.rev == done.rev + 1 and back.fsm == history[2].fsm
            fork = await engine.afork(first.sid, 3, "copy")
            # Revisions 0..3 copied, then the fork's own, naming its parent.
            assert fork.sid == "copy" and fork.rev == 4
            assert fork.events[0]["from"] == {"sid": first.sid, "rev": 3}

    asyncio.run(go())


def test_two_coroutines_stepping_one_session_never_both_commit(
        where: Callable[[], str | None]) -> None:
    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            sid = (await engine.astart(CLAIM)).sid
            both = threading.Barrier(2, timeout=30)
            _gate(engine, both.wait)  # each step waits until the other has read the head
            results = await asyncio.gather(engine.astep(sid), engine.astep(sid))
            won = [r for r in results if r.revision is not None]
            lost = [r for r in results if r.revision is None]
            assert len(won) == 1 and len(lost) == 1
            assert lost[0].lost_race and lost[0].envelope.e is not None
            assert lost[0].envelope.e.code == "REV_CONFLICT"
            assert (await engine.ahead(sid)).rev == 1

    asyncio.run(go())


def test_concurrent_aruns_of_one_session_write_one_history(
        where: Callable[[], str | None]) -> None:
    want, _, _ = _sync_run(where())

    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            await engine.driver.astart(CLAIM, sid="s1", config=engine.sync.session_config())
            heads = await asyncio.gather(*(engine.arun("s1") for _ in range(4)))
            # A run that loses a race from a head it has just read stops there, as
            # Driver.run does; what each returned is a revision of the one history.
            await engine.arun("s1")
            history = await engine.ahistory("s1")
            assert _dump(history) == want
            assert all(_dump([h]) == _dump([history[h.rev]]) for h in heads)

    asyncio.run(go())


def test_a_cancelled_astep_commits_nothing_and_the_session_goes_on(
        where: Callable[[], str | None]) -> None:
    want, _, _ = _sync_run(where())

    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            await engine.driver.astart(CLAIM, sid="s1", config=engine.sync.session_config())
            entered, release = threading.Event(), threading.Event()

            def hold() -> None:
                entered.set()
                release.wait(30)

            _gate(engine, hold)
            task = asyncio.ensure_future(engine.astep("s1"))
            await asyncio.to_thread(entered.wait, 30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            release.set()
            await asyncio.sleep(0.2)  # the abandoned skill finishes on its thread
            assert (await engine.ahead("s1")).rev == 0
            _gate(engine, lambda: None)
            assert (await engine.arun("s1")).fsm == "DONE"
            assert _dump(await engine.ahistory("s1")) == want

    asyncio.run(go())


def test_cancelling_asteps_at_any_point_keeps_the_store_consistent(
        where: Callable[[], str | None]) -> None:
    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            sid = (await engine.astart(CLAIM)).sid
            store = engine.sync.store
            for i in range(24):
                head = await engine.ahead(sid)
                if head.fsm == "DONE":
                    break
                task = asyncio.ensure_future(engine.astep(sid))
                await asyncio.sleep((i % 6) * 0.003)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                await asyncio.sleep(0.05)  # a step abandoned on its thread commits nothing
                after = await engine.ahead(sid)
                assert after.rev in (head.rev, head.rev + 1)
                assert store.verify_chain(sid).ok
            done = await engine.arun(sid)
            assert done.fsm == "DONE"
            revs: list[Revision] = list(await engine.ahistory(sid))
            assert [r.rev for r in revs] == list(range(done.rev + 1))
            assert store.verify_chain(sid).ok

    asyncio.run(go())


def test_the_step_observer_sees_async_steps(where: Callable[[], str | None]) -> None:
    from claimfsm.observe.observer import Observer
    from claimfsm.observe.tally import Tally

    async def go() -> None:
        async with await AsyncEngine.open(where(), config=_config()) as engine:
            tally = Tally()
            engine.sync.driver.observer = Observer(tally=tally)
            done = await engine.arun((await engine.astart(CLAIM)).sid)
            assert done.fsm == "DONE"
            assert tally.commits == done.rev and tally.conflicts == 0
            assert sum(tally.steps.values()) == done.rev

    asyncio.run(go())
