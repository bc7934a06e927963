"""A tick killed at any point (SIGKILL, while it commits its batches) leaves every
session at a consistent revision: still waiting with no ``TimedOut``, or moved on with
exactly one, a batch of 100 landing whole or not at all; the chains verify and the due
index lists exactly the sessions still waiting; the next tick finishes them, each once
(SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from tests.engine.test_people import _check_once, _due_sessions
from tests.support.pg import PgServer

ROOT = Path(__file__).resolve().parents[2]
_CHILD = """
import sys
from datetime import timedelta
from claimfsm.engine.tick import tick
from claimfsm.state.open import open_store
from claimfsm.testing import FixedClock
from tests.engine.test_people import T0, _workflow
with open_store(sys.argv[1]) as store:
    driver = _workflow().driver(store, clock=FixedClock(T0 + timedelta(seconds=61)))
    print("ticking", flush=True)
    tick(driver)
print("done", flush=True)
"""


def _consistent(store: StateStore, sids: list[str]) -> int:
    """How many sessions are still waiting; fails on any other state."""
    waiting = []
    for sid in sids:
        history = store.history(sid)
        timed = [r for r in history if any(e["type"] == "TimedOut" for e in r.events)]
        if history[-1].fsm == "APPROVE":
            assert timed == [], sid
            waiting.append(sid)
        else:
            assert len(timed) == 1 and history[-1].fsm == "EXPIRED", sid
        assert store.verify_chain(sid).ok, sid
    assert sorted(store.due("9999-01-01T00:00:00.000000", limit=10_000)) == sorted(waiting)
    return len(waiting)


def _kill_ticks(db: str, make: Callable[[], StateStore], sids: list[str]) -> None:
    rng = random.Random(22)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(4):
        child = subprocess.Popen([sys.executable, "-c", _CHILD, db], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ticking", child.stderr
        time.sleep(rng.uniform(0.0, 0.4))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        with make() as store:
            # A batch of 100 lands whole or not at all (one transaction each).
            assert _consistent(store, sids) % 100 == 0
    child = subprocess.run([sys.executable, "-c", _CHILD, db], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600, check=False)
    assert child.returncode == 0, child.stderr
    with make() as store:
        assert _consistent(store, sids) == 0
        _check_once(store, sids)


def test_a_killed_tick_leaves_sqlite_consistent(tmp_path: Path) -> None:
    path = tmp_path / "kill.db"
    with SQLiteStore(path) as store:
        _, sids = _due_sessions(store, 300)
    _kill_ticks(str(path), lambda: SQLiteStore(path), sids)


def test_a_killed_tick_leaves_postgres_consistent(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _, sids = _due_sessions(store, 300)
    _kill_ticks(url, lambda: PostgresStore(url), sids)
