"""What timers cost: ``claimfsm tick`` over 100,000 waiting sessions of which 1,000 are
due, on SQLite and (with ``CLAIMFSM_PG_URL`` set, as ``make bench-tick`` does) on
PostgreSQL; and what holds cost the sessions that never hold (0 bytes per step).
``python -m claimfsm.bench.tick [--sessions N] [--due M] [--runs R] [--json FILE]``.

Every session waits in a wait state with a deadline (one revision each). ``R`` groups of
``M`` were started earlier, a minute apart, so that at each of ``R`` ticks exactly the
next group's deadlines have passed: every tick finds ``M`` due among ``N`` sessions. A
tick reads the due sessions from the store's index on due time and commits one
``TimedOut`` revision for each: its time grows with the due sessions, not with the
store. Each tick's wall and CPU time is kept (the machine may be loaded by other work),
and on PostgreSQL the statements and round trips of its commits. Figures are
measurements (docs/review.md), never assertions in a test; a goal is checked against the
median tick.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.api import Workflow, define_machine, wait
from claimfsm.engine.tick import tick
from claimfsm.skills.context import FixedClock
from claimfsm.state.holds import due_key
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore

__all__ = ["build", "measure", "run", "zero_bytes"]

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TIMEOUT = 3600.0


class Answer(BaseModel):
    """Any answer: the benchmark never gives one."""

    model_config = ConfigDict(defer_build=True)

    ok: bool = True


def workflow() -> Workflow:
    """One wait state with a deadline, a way out for the input and one for the timeout."""
    return define_machine("tick_bench", states={
        "ASK": wait(Answer, timeout=TIMEOUT, on_timeout="EXPIRED"),
        "DONE": None, "EXPIRED": None,
    }, transitions=[("ASK", "DONE"), ("ASK", "EXPIRED")])


def build(store: StateStore, sessions: int, due: int, *, runs: int = 1, threads: int = 1,
          connect: Callable[[], StateStore] | None = None) -> None:
    """``sessions`` waiting sessions in ``store``: ``runs`` groups of ``due`` whose
    deadlines pass one after the other (group ``k`` at :func:`deadline` ``(k)``), the
    rest due long after; with ``connect``, each of ``threads`` writes through a store of
    its own."""
    wf = workflow()
    run_id = uuid.uuid4().hex[:6]

    def start(first: int, last: int) -> None:
        own = connect() if connect is not None else store
        try:
            late = wf.driver(own, clock=FixedClock(T0))
            groups = [wf.driver(own, clock=FixedClock(deadline(k) - timedelta(seconds=TIMEOUT)))
                      for k in range(runs)]
            for n in range(first, last):
                group = n // due if due else runs
                (groups[group] if group < runs else late).start("c", sid=f"{run_id}-{n}")
        finally:
            if own is not store:
                own.close()

    step = -(-sessions // threads)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: start(i, min(sessions, i + step)), range(0, sessions, step)))


def deadline(group: int) -> datetime:
    """When the deadlines of group ``group`` pass (a minute apart, all before T0)."""
    return T0 - timedelta(seconds=TIMEOUT) + timedelta(minutes=group)


def measure(store: StateStore, due: int, runs: int = 1) -> dict[str, Any]:
    """The due query (median of 5), then ``runs`` ticks, each when exactly the next
    group's ``due`` deadlines have passed (so each advances ``due`` sessions of the
    store), and an idle tick. Wall and this process's CPU time of each; on PostgreSQL
    the statements and round trips its commits cost."""
    now = due_key((deadline(0) + timedelta(seconds=30)).isoformat())
    queries = []
    for _ in range(5):
        began = time.perf_counter()
        found = store.due(now, limit=due + 1)
        queries.append(time.perf_counter() - began)
    ticks: list[dict[str, Any]] = []
    for group in range(runs):
        clock = FixedClock(deadline(group) + timedelta(seconds=30))
        driver = workflow().driver(store, clock=clock)
        trips = _trips(store)
        began, cpu = time.perf_counter(), time.process_time()
        report = tick(driver, limit=due + 1)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        one: dict[str, Any] = {"advanced": report.advanced, "tick_s": round(seconds, 3),
                               # What a loaded machine's wall clock hides.
                               "tick_cpu_s": round(cpu, 3), "load": round(os.getloadavg()[0], 1)}
        after = _trips(store)
        if trips is not None and after is not None:
            one["commit_statements"] = after[0] - trips[0]
            one["commit_round_trips"] = after[1] - trips[1]
        ticks.append(one)
    began = time.perf_counter()
    idle = tick(workflow().driver(store, clock=FixedClock(deadline(runs) - timedelta(seconds=30))))
    idle_s = time.perf_counter() - began
    walls = [t["tick_s"] for t in ticks]
    return {"due_found": len(found), "due_query_ms": round(statistics.median(queries) * 1e3, 2),
            "advanced": ticks[0]["advanced"], "tick_s": round(statistics.median(walls), 3),
            "tick_s_max": max(walls),
            "tick_cpu_s": round(statistics.median(t["tick_cpu_s"] for t in ticks), 3),
            "ticks": ticks, "idle_tick_ms": round(idle_s * 1e3, 2), "idle_due": idle.due}


def _trips(store: StateStore) -> tuple[int, int] | None:
    statements = getattr(store, "commit_statements", None)
    if statements is None:
        return None
    return int(statements), int(store.commit_round_trips)  # type: ignore[attr-defined]


def zero_bytes(folder: Path) -> dict[str, Any]:
    """Sessions that never hold store what they stored before holds existed: every
    recorded session (written by claimfsm before this feature) replays with each chain
    hash equal, and leaves no ``st_timers`` row; a session paused before VERIFY and
    resumed costs its hold revisions only."""
    from claimfsm.engine.runtime import FIXTURES
    from claimfsm.replay.record import read_record
    from claimfsm.replay.runner import replay_record

    path = folder / "bytes.db"
    records = sorted((FIXTURES / "sessions").glob("*.jsonl"))
    same = steps = 0
    with SQLiteStore(path) as store:
        for record in records:
            report = replay_record(read_record(record), mode="strict", store=store)
            same += int(report.ok and report.verified)
            steps += report.steps
    conn = sqlite3.connect(path)
    row_bytes = conn.execute("SELECT sum(length(body) + length(extra)) FROM st_revisions"
                             ).fetchone()[0]
    timers = conn.execute("SELECT count(*) FROM st_timers").fetchone()[0]
    conn.close()
    return {"records": len(records), "hash_identical": same, "steps": steps,
            "bytes_per_step": round(row_bytes / max(1, steps), 1), "timer_rows": timers,
            "bytes_added_per_step": 0 if same == len(records) and timers == 0 else None}


def run(sessions: int, due: int, pg: str | None, runs: int = 5) -> dict[str, Any]:
    """Every figure: SQLite, PostgreSQL when ``pg`` is given, the bytes check."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
                           "cpus": os.cpu_count(), "sessions": sessions, "due": due,
                           "runs": runs, "started_utc": time.strftime("%H:%M:%S", time.gmtime()),
                           "load_at_start": [round(x, 1) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with SQLiteStore(folder / "tick.db") as store:
            began = time.perf_counter()
            build(store, sessions, due, runs=runs)
            out["sqlite_build_s"] = round(time.perf_counter() - began, 1)
            out["sqlite"] = measure(store, due, runs)
        if pg:
            from claimfsm.state.postgres import PostgresStore

            with PostgresStore(pg) as store:
                began = time.perf_counter()
                build(store, sessions, due, runs=runs, threads=8,
                      connect=lambda: PostgresStore(pg))
                out["postgres_build_s"] = round(time.perf_counter() - began, 1)
                # What autovacuum does to tables that grew: the planner's statistics.
                import psycopg

                with psycopg.connect(pg, autocommit=True) as conn:
                    conn.execute("ANALYZE")
                out["postgres"] = measure(store, due, runs)
        out["never_pausing"] = zero_bytes(folder)
    out["load_at_end"] = [round(x, 1) for x in os.getloadavg()]
    goals = {"sqlite_tick_le_1s": out["sqlite"]["tick_s"] <= 1.0,
             "zero_bytes": out["never_pausing"]["bytes_added_per_step"] == 0}
    if pg:
        goals["postgres_tick_le_1s"] = out["postgres"]["tick_s"] <= 1.0
    out["goals"] = goals
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the figures (and write them with ``--json``); 1 when a goal is missed."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.tick")
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--due", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=5,
                        help="ticks measured, each advancing --due sessions")
    parser.add_argument("--json", dest="json_file", default=None)
    args = parser.parse_args(argv)
    figures = run(args.sessions, args.due, os.environ.get("CLAIMFSM_PG_URL"), args.runs)
    text = orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode()
    print(text)
    if args.json_file:
        Path(args.json_file).write_text(text + "\n", encoding="utf-8")
    return 0 if all(figures["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
