"""Who asked for a write, on every backend: ``step``, ``run`` (each of its steps) and
``fork``, sync and async, record ``actor`` in the revisions they commit (a step's last
event ``{"type": "Actor", "actor"}``, the fork's ``Forked`` event), checked like every
actor; without one nothing changes: the same revisions, hash for hash, as a session that
never heard of actors; a record of a session with actors replays exactly and an edited
actor is ``RECORD_TAMPERED``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.engine.async_runtime import AsyncEngine
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.errors import BadInput
from claimfsm.engine.runtime import Engine
from claimfsm.replay.errors import RecordTampered
from claimfsm.replay.record import parse_record
from claimfsm.replay.runner import replay_record
from claimfsm.replay.write import engine_record
from claimfsm.skills.context import FixedClock
from claimfsm.state.aio import async_store_of
from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.model import Revision
from tests.replay.sealing import resealed

CLAIM = "Water boils at 100 C at sea level."
T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
ACTOR = {"type": "Actor", "actor": "k-write"}


def _open(db: str | None) -> Engine:
    return Engine.open(db, config=EngineConfig(clock=FixedClock(T0, tick=timedelta(seconds=1))))


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of engines over one backend (memory: a new store each time)."""
    if request.param == "memory":
        yield lambda name: None
    elif request.param == "sqlite":
        yield lambda name: str(tmp_path / f"{name}.db")
    else:
        url = request.getfixturevalue("pg_url")
        yield lambda name: url


def _stripped(rev: Revision) -> list[dict[str, Any]]:
    # The events as they would be without an actor recorded.
    return [{k: v for k, v in ev.items() if k != "actor"} for ev in rev.events
            if ev.get("type") != "Actor"]


def _drive(eng: Engine, sid: str, actor: str | None) -> str:
    """A step, a run to the end and a fork at 2, each with ``actor``; the fork's id."""
    d = eng.driver
    d.step(sid, actor=actor)
    assert d.run(sid, actor=actor).fsm == "DONE"
    return d.fork(sid, 2, f"{sid}-f", actor=actor).sid


def test_step_run_and_fork_record_the_actor(where: Any) -> None:
    with _open(where("a")) as eng:
        sid = eng.driver.start(CLAIM, sid="with", config=eng.session_config()).sid
        fork = _drive(eng, sid, "k-write")
        history = list(eng.store.history(sid))
        assert len(history) > 3
        for rev in history[1:]:  # every step, the one and the run's, ends with the actor
            assert rev.events[-1] == ACTOR, rev.rev
            assert [e for e in rev.events if "actor" in e] == [ACTOR]
        assert "actor" not in history[0].events[0]  # start was not given one
        mark = eng.store.get(fork, 3)
        assert mark.events == [{"type": "Forked", "from": {"sid": sid, "rev": 2},
                                "changes": [], "actor": "k-write"}]
        assert eng.store.verify_chain(sid).ok and eng.store.verify_chain(fork).ok


def test_without_an_actor_nothing_but_the_actor_differs(where: Any) -> None:
    # (That a session without actors hashes exactly as before is the shipped records'
    # business: tests/replay/test_replay_fixtures.py regenerates them byte for byte and
    # replays them, and 0.1.0's, against their chain hashes.)
    with _open(where("b")) as plain, _open(where("c")) as named:
        a = plain.driver.start(CLAIM, sid="plain", config=plain.session_config()).sid
        plain.driver.step(a)
        plain.driver.run(a)
        fa = plain.driver.fork(a, 2, "plain-f").sid
        b = named.driver.start(CLAIM, sid="named", config=named.session_config()).sid
        fb = _drive(named, b, "k-write")
        for x, y in ((a, b), (fa, fb)):
            left, right = list(plain.store.history(x)), list(named.store.history(y))
            assert len(left) == len(right) > 3
            for one, other in zip(left, right, strict=True):
                assert not any("actor" in e or e.get("type") == "Actor" for e in one.events)
                # The actor is all that differs: nothing else of the revision moved.
                assert orjson.dumps(one.events) == orjson.dumps(_stripped(other)).replace(
                    b'"named"', b'"plain"')
                assert (one.rev, one.fsm, one.ts, one.envelope) == \
                    (other.rev, other.fsm, other.ts, other.envelope)
                assert one.state.model_dump(exclude={"sid", "runtime"}) == \
                    other.state.model_dump(exclude={"sid", "runtime"})


def test_async_step_run_and_fork_record_the_actor(where: Any) -> None:
    async def go(eng: Engine) -> tuple[str, str]:
        aeng = AsyncEngine.over(eng, async_store_of(eng.store))
        sid = (await aeng.astart(CLAIM)).sid
        await aeng.astep(sid, actor="k-write")
        assert (await aeng.arun(sid, actor="k-write")).fsm == "DONE"
        fork = (await aeng.afork(sid, 2, f"{sid}-af", actor="k-write")).sid
        return sid, fork

    with _open(where("d")) as eng:
        sid, fork = asyncio.run(go(eng))
        for rev in list(eng.store.history(sid))[1:]:
            assert rev.events[-1] == ACTOR
        assert eng.store.get(fork, 3).events[0]["actor"] == "k-write"


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201])
def test_a_bad_actor_is_refused_before_anything_is_written(bad: str) -> None:
    with _open(None) as eng:
        sid = eng.start(CLAIM).sid
        for write in (lambda: eng.driver.step(sid, actor=bad),
                      lambda: eng.driver.run(sid, actor=bad),
                      lambda: eng.driver.fork(sid, 0, "f", actor=bad),
                      lambda: eng.driver.rollback(sid, 0, actor=bad),
                      lambda: eng.driver.start(CLAIM, actor=bad)):
            with pytest.raises(BadInput) as info:
                write()
            assert info.value.code == "BAD_INPUT" and info.value.field == "actor"
        assert eng.store.head(sid).rev == 0
        assert [i.sid for i in eng.store.summaries(SummaryQuery(limit=10)).items] == [sid]


def test_a_record_with_actors_replays_exactly_and_an_edited_actor_is_tampered() -> None:
    with _open(None) as eng:
        sid = eng.start(CLAIM, actor="k-write").sid
        eng.driver.step(sid, actor="k-write")
        eng.driver.run(sid, actor="k-other")
        eng.driver.rollback(sid, 2, actor="k-write")
        eng.driver.run(sid, actor="k-write")
        data = engine_record(eng, sid).to_bytes()
    steps = [orjson.loads(x) for x in data.splitlines() if b'"t":"step"' in x]
    assert [s["actor"] for s in steps][:2] == ["k-write", "k-other"]
    assert all(not any(e.get("type") == "Actor" for e in s["events"]) for s in steps)
    for mode in ("strict", "tools"):
        report = replay_record(parse_record(data, source="actors"), mode)
        assert report.ok and report.divergence is None, (mode, report.divergence)
    lines = data.splitlines()
    at = next(i for i, x in enumerate(lines) if b'"actor":"k-other"' in x)
    edited = lines.copy()
    edited[at] = edited[at].replace(b'"actor":"k-other"', b'"actor":"k-write"')
    with pytest.raises(RecordTampered) as info:
        parse_record(b"\n".join(edited) + b"\n", source="edited")
    assert info.value.code == "RECORD_TAMPERED" and info.value.line == at + 1
    # Sealed again, the edit is still found: the replayed step hashes otherwise.
    objs = [orjson.loads(x) for x in lines]
    objs[at]["actor"] = "k-write"
    report = replay_record(parse_record(resealed(objs), source="resealed"), "strict")
    d = report.divergence
    assert d is not None and (d.kind, d.line, d.path) == ("HASH_MISMATCH", at + 1, "h")
    # A line without its actor (dropped, sealed again) does not replay either.
    objs[at].pop("actor")
    report = replay_record(parse_record(resealed(objs), source="dropped"), "strict")
    assert report.divergence is not None and report.divergence.line == at + 1


def test_a_fork_record_replays_with_its_actor() -> None:
    with _open(None) as eng:
        sid = eng.driver.run(eng.start(CLAIM).sid).sid
        fork = eng.driver.fork(sid, 2, "child", actor="k-write").sid
        eng.driver.run(fork, actor="k-write")
        data = engine_record(eng, fork).to_bytes()
    person = next(orjson.loads(x) for x in data.splitlines() if b'"t":"person"' in x)
    assert (person["act"], person["actor"]) == ("fork", "k-write")
    report = replay_record(parse_record(data, source="fork"), "strict")
    assert report.ok, report.divergence
    objs = [orjson.loads(x) for x in data.splitlines()]
    objs[[o.get("t") for o in objs].index("person")]["actor"] = "mallory"
    report = replay_record(parse_record(resealed(objs), source="forged"), "strict")
    assert report.divergence is not None and report.divergence.path == "h"


class _Watching:
    """A step observer that only lets each step through (the traced path's shape)."""

    def __init__(self) -> None:
        self.steps = 0

    def step(self, head: Revision, fire: Any) -> Any:
        self.steps += 1
        return fire(head)


def test_an_observed_step_records_the_actor_sync_and_async() -> None:
    with _open(None) as eng:
        watching = _Watching()
        eng.driver.observer = watching
        sid = eng.start(CLAIM).sid
        eng.driver.step(sid, actor="k-write")
        eng.driver.step(sid)

        async def go() -> None:
            aeng = AsyncEngine.over(eng, async_store_of(eng.store))
            await aeng.astep(sid, actor="k-async")
            await aeng.arun(sid, actor="k-async")

        asyncio.run(go())
        history = list(eng.store.history(sid))
        assert watching.steps == len(history) - 1
        assert [[e["actor"] for e in r.events if "actor" in e] for r in history[1:3]] == \
            [["k-write"], []]
        assert all(r.events[-1] == {"type": "Actor", "actor": "k-async"}
                   for r in history[3:])


def test_a_crossing_to_another_version_records_the_actor_and_replays() -> None:
    from claimfsm.engine.version import Versioning
    from claimfsm.replay.write import export_record
    from claimfsm.skills.context import FixedClock as Clock
    from claimfsm.state.memory import MemoryStore
    from tests.support.versions import V1, V2

    store = MemoryStore()
    d1 = V1.driver(store, clock=Clock(), new_sid=lambda: "s1")
    d1.start("claim")
    assert d1.step("s1", actor="k-one").after == "B"
    d2 = V2.driver(store, clock=Clock())
    assert d2.run("s1", actor="k-two").fsm == "DONE"
    crossed = next(r for r in store.history("s1") if r.skill == "migrate")
    assert crossed.events[0]["type"] == "Migrated"
    assert crossed.events[-1] == {"type": "Actor", "actor": "k-two"}
    record = export_record(store, "s1", tools=None, bindings=V2.bindings,
                           machine="versioned", finals=V2.definition.finals)
    assert [s.actor for s in record.steps] == ["k-one", "k-two", "k-two"]
    report = replay_record(record, "strict", machine=V2.definition, bindings=V2.bindings,
                           versioning=Versioning(V2.version, V2.migrations),
                           registered=[(V1.definition, V1.bindings)])
    assert report.ok, report.divergence
