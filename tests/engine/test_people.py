"""Wait states, timers and holds in the engine: a wait(...) state is checked when the
machine is built; a deadline passes and tick moves the session once, even with racing
tickers (SQLite and PostgreSQL); rewinds and forks carry holds as revisions do; a store
from before timers opens, gets its index and passes fsck."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel

from claimfsm import define_machine, skill, wait
from claimfsm.engine.api import Workflow
from claimfsm.engine.errors import MachineDefinitionError
from claimfsm.engine.tick import tick
from claimfsm.state.fsck import fsck
from claimfsm.state.holds import hold_of
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import RetryState, Revision
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from claimfsm.testing import FixedClock
from tests.support.pg import PgServer

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class Approval(BaseModel):
    ok: bool


@skill()
def draft(inp, ctx):  # type: ignore[no-untyped-def]
    return inp.ok("APPROVE", text="draft")


def _workflow(timeout: float | None = 60.0) -> Workflow:
    return define_machine(
        "approvals",
        states={"DRAFT": draft,
                "APPROVE": wait(Approval, timeout=timeout,
                                on_timeout="EXPIRED" if timeout else None,
                                route=lambda a: "DONE" if a.ok else "REJECTED",
                                moves=("DONE", "REJECTED")),
                "DONE": None, "REJECTED": None, "EXPIRED": None},
        transitions=[("DRAFT", "APPROVE"), ("APPROVE", "DONE"), ("APPROVE", "REJECTED"),
                     ("APPROVE", "EXPIRED")])


@pytest.mark.parametrize(("states", "transitions", "fragment"), [
    ({"A": wait(Approval, moves=("Z",)), "Z": None, "Y": None}, [("A", "Y")],
     "input move A->Z is not a transition"),
    ({"A": wait(Approval, timeout=5), "Z": None}, [("A", "Z")],
     "timeout and on_timeout go together"),
    ({"A": wait(Approval, moves=("Z", "Y")), "Z": None, "Y": None},
     [("A", "Z"), ("A", "Y")], "2 moves and no route"),
    ({"A": wait(Approval, timeout=5, on_timeout="Q"), "Z": None}, [("A", "Z")],
     "on_timeout move A->Q is not a transition"),
    ({"A": wait(Approval)}, [], "input chooses no move"),
    ({"A": wait(int)}, [("A", "Z")], "not a pydantic model"),
])
def test_a_wait_state_is_checked_when_the_machine_is_built(
        states: dict, transitions: list, fragment: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(MachineDefinitionError) as exc:
        define_machine("bad", states=states, transitions=transitions)
    assert any(fragment in p for p in exc.value.problems), exc.value.problems


def test_a_wait_state_holds_until_input_and_routes_it() -> None:
    clock = FixedClock(T0)
    d = _workflow().driver(MemoryStore(), clock=clock)
    sid = d.start("c").sid
    head = d.run(sid)
    hold = hold_of(head.state)
    assert head.fsm == "APPROVE" and hold is not None
    assert hold["until"] == (T0 + timedelta(seconds=60)).isoformat(timespec="microseconds")
    assert d.run(sid).rev == head.rev and not d.step(sid).committed
    rev = d.input(sid, {"ok": False}, actor="kim")
    assert (rev.fsm, rev.rev, rev.state.memory["ok"]) == ("REJECTED", head.rev + 1, False)


def _due_sessions(store: StateStore, n: int) -> tuple[Workflow, list[str]]:
    wf = _workflow()
    d = wf.driver(store, clock=FixedClock(T0))
    sids = []
    for _ in range(n):
        sid = d.start("c").sid
        d.run(sid)
        sids.append(sid)
    return wf, sids


def _race(make_store: object, wf: Workflow, sids: list[str], tickers: int) -> None:
    later = T0 + timedelta(seconds=61)
    barrier = threading.Barrier(tickers)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            with make_store() as store:  # type: ignore[operator]
                d = wf.driver(store, clock=FixedClock(later))
                barrier.wait()
                tick(d, now=later)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(tickers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _check_once(store: StateStore, sids: list[str]) -> None:
    for sid in sids:
        history = store.history(sid)
        timed = [r for r in history if any(e["type"] == "TimedOut" for e in r.events)]
        assert len(timed) == 1 and history[-1].fsm == "EXPIRED", sid
        assert store.verify_chain(sid).ok
    assert store.due("9999-01-01T00:00:00.000000") == []


def test_tick_moves_a_passed_deadline_once(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        wf, sids = _due_sessions(store, 3)
        early = wf.driver(store, clock=FixedClock(T0 + timedelta(seconds=59)))
        assert tick(early).to_json() == {"due": 0, "advanced": 0, "skipped": 0, "sids": [],
                                     "conflicts": []}
        late = wf.driver(store, clock=FixedClock(T0 + timedelta(seconds=60)))
        report = tick(late, limit=2)
        assert (report.due, report.advanced) == (2, 2)
        assert tick(late).sids == [sids[2]]
        _check_once(store, sids)


def test_racing_tickers_on_sqlite_advance_each_session_once(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    with SQLiteStore(path) as store:
        wf, sids = _due_sessions(store, 20)
    _race(lambda: SQLiteStore(path), wf, sids, 4)
    with SQLiteStore(path) as store:
        _check_once(store, sids)
        assert fsck(store).ok


def test_racing_tickers_on_postgres_advance_each_session_once(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        wf, sids = _due_sessions(store, 20)
    _race(lambda: PostgresStore(url), wf, sids, 4)
    with PostgresStore(url) as store:
        _check_once(store, sids)


def test_rewind_and_fork_carry_the_hold_of_their_revision() -> None:
    d = _workflow(timeout=None).driver(MemoryStore(), clock=FixedClock(T0))
    sid = d.start("c").sid
    waiting = d.run(sid)
    d.rollback(sid, 0)
    assert hold_of(d.store.head(sid).state) is None  # back in DRAFT: runs again
    again = d.run(sid)
    assert again.fsm == "APPROVE" and hold_of(again.state) is not None
    d.input(sid, {"ok": True}, actor="kim")
    d.rollback(sid, waiting.rev)
    assert hold_of(d.store.head(sid).state) is not None  # rewound to a wait: waits again
    fork = d.fork(sid, waiting.rev)
    assert d.input(fork.sid, {"ok": True}, actor="lee").fsm == "DONE"


def _old_sqlite_store(path: Path) -> str:
    """A store as claimfsm wrote it before timers: a session with a retry that is due."""
    with SQLiteStore(path) as store:
        first = _workflow().driver(store, clock=FixedClock(T0)).start("c")
        retry = RetryState(state="DRAFT", attempts=1, next_at=T0.isoformat(), code="X")
        state = first.state.model_copy(update={"retry": retry})
        store.commit(Revision(sid=first.sid, rev=1, parent_rev=0, fsm="DRAFT", skill=None,
                              envelope=None, state=state, ts=T0.isoformat()), expected_rev=0)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE st_timers")
    conn.commit()
    conn.close()
    return first.sid


def test_a_store_from_before_timers_gets_its_index_and_passes_fsck(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sid = _old_sqlite_store(path)
    with SQLiteStore(path, readonly=True) as store:  # read-only: scanned, nothing written
        assert store.due("9999-01-01T00:00:00.000000") == [sid]
    with SQLiteStore(path) as store:
        assert fsck(store).ok
        assert store.due("9999-01-01T00:00:00.000000") == [sid]
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT due, waiting FROM st_timers").fetchall()
    meta = conn.execute("SELECT value FROM st_meta WHERE key = 'timers'").fetchall()
    conn.close()
    assert rows == [(T0.replace(tzinfo=None).isoformat(timespec="microseconds"), 0)]
    assert meta == []


def test_a_postgres_database_from_before_timers_gets_its_index(pg_server: PgServer) -> None:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        first = _workflow().driver(store, clock=FixedClock(T0)).start("c")
        retry = RetryState(state="DRAFT", attempts=1, next_at=T0.isoformat(), code="X")
        state = first.state.model_copy(update={"retry": retry})
        store.commit(Revision(sid=first.sid, rev=1, parent_rev=0, fsm="DRAFT", skill=None,
                              envelope=None, state=state, ts=T0.isoformat()), expected_rev=0)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE st_timers")
    with PostgresStore(url) as store:
        assert store.due("9999-01-01T00:00:00.000000") == [first.sid]
        assert store.verify_chain(first.sid).ok
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM st_timers").fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM st_meta WHERE key = 'timers'"
                            ).fetchone() == (0,)


def test_the_background_ticker_advances_due_sessions(tmp_path: Path) -> None:
    import time

    from claimfsm.engine.tick import Ticker

    with SQLiteStore(tmp_path / "bg.db") as store:
        wf, sids = _due_sessions(store, 2)
        driver = wf.driver(store, clock=FixedClock(T0 + timedelta(seconds=61)))
        ticker = Ticker(driver, interval=0.02).start()
        try:
            for _ in range(500):  # the thread's pace, not a timing: wait until it ticked
                if all(store.head(s).fsm == "EXPIRED" for s in sids):
                    break
                time.sleep(0.02)
        finally:
            ticker.stop()
        assert ticker.errors == [] and ticker.ticks >= 1
        _check_once(store, sids)
