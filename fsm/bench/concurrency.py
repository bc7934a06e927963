"""N concurrent sessions: the async engine against a thread pool over the sync one.

For each backend (memory, a SQLite file, and PostgreSQL when ``CLAIMFSM_PG_URL`` names a
server: ``make bench-async`` starts a throwaway one) and each N, the demo claims are
started and run to DONE, N at a time, on a fresh database:

- ``async``: one :class:`~claimfsm.engine.async_runtime.AsyncEngine`, ``asyncio.gather``
  of N ``astart`` + ``arun`` (skills on the loop's default executor);
- ``threads``: one :class:`~claimfsm.engine.runtime.Engine`, N ``start`` + ``run`` on a
  ``ThreadPoolExecutor`` of N threads;
- ``on_loop``: the sync engine called straight from N coroutines (what an application
  gets by calling the sync API on its loop), for the loop's lag only.

Figures: sessions/s, steps/s and, for ``async`` and ``on_loop``, the event loop's lag
while the sessions run (a 5 ms ticker's lateness, median and max): what an
application's other requests wait. Rounds interleave the drivers (a load spike on a
shared machine hits each alike); medians over rounds. ``python -m
claimfsm.bench.concurrency [--json FILE]``; never an assertion in a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from claimfsm.engine.async_runtime import AsyncEngine
from claimfsm.engine.runtime import FIXTURES, Engine

__all__ = ["main", "run_bench"]

_TICK = 0.005


@contextmanager
def _fresh(backend: str, pg_url: str | None) -> Iterator[str | None]:
    """A new, empty database of ``backend`` (``None``: memory)."""
    if backend == "memory":
        yield None
    elif backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield str(Path(tmp) / "bench.db")
    else:
        import psycopg

        assert pg_url is not None
        name = "b_" + uuid.uuid4().hex[:12]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        sep = "&" if "?" in pg_url else "?"
        try:
            yield f"{pg_url}{sep}options=-csearch_path%3D{name}"
        finally:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {name} CASCADE")


async def _ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        began = time.perf_counter()
        await asyncio.sleep(_TICK)
        lags.append(max(0.0, time.perf_counter() - began - _TICK))


async def _gathered(one: Callable[[str], Awaitable[int]], claims: list[str]
                    ) -> dict[str, float]:
    """Every claim through ``one`` at once, timed, with the loop's lag sampled meanwhile."""
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lags, stop))
    began = time.perf_counter()
    revs = await asyncio.gather(*(one(c) for c in claims))
    wall = time.perf_counter() - began
    stop.set()
    await ticker
    return {"wall_s": wall, "steps": float(sum(revs)),
            "lag_median_ms": 1000 * statistics.median(lags or [0.0]),
            "lag_max_ms": 1000 * max(lags or [0.0])}


def _async_round(db: str | None, claims: list[str]) -> dict[str, float]:
    async def go() -> dict[str, float]:
        async with await AsyncEngine.open(db) as engine:
            async def one(claim: str) -> int:
                return (await engine.arun((await engine.astart(claim)).sid)).rev

            return await _gathered(one, claims)

    loop = asyncio.new_event_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=len(claims)))
    try:
        return loop.run_until_complete(go())
    finally:
        loop.close()


def _on_loop_round(db: str | None, claims: list[str]) -> dict[str, float]:
    async def go() -> dict[str, float]:
        with Engine.open(db) as engine:
            async def one(claim: str) -> int:
                await asyncio.sleep(0)
                return engine.driver.run(engine.start(claim).sid).rev

            return await _gathered(one, claims)

    return asyncio.run(go())


def _threads_round(db: str | None, claims: list[str]) -> dict[str, float]:
    with Engine.open(db) as engine, ThreadPoolExecutor(max_workers=len(claims)) as pool:
        def one(claim: str) -> int:
            return engine.driver.run(engine.start(claim).sid).rev

        began = time.perf_counter()
        revs = list(pool.map(one, claims))
        wall = time.perf_counter() - began
    return {"wall_s": wall, "steps": float(sum(revs))}


_ROUNDS = {"async": _async_round, "threads": _threads_round, "on_loop": _on_loop_round}


def run_bench(counts: list[int], rounds: int, backends: list[str],
              pg_url: str | None) -> dict[str, Any]:
    """The figures (see the module docstring)."""
    demo = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
    rows: list[dict[str, Any]] = []
    for backend in backends:
        for n in counts:
            claims = [demo[i % len(demo)] for i in range(n)]
            got: dict[str, list[dict[str, float]]] = {m: [] for m in _ROUNDS}
            with _fresh(backend, pg_url) as db:  # warm-up: skills' imports, the index
                _threads_round(db, claims[:2])
            for _ in range(rounds):
                for mode, fn in _ROUNDS.items():
                    with _fresh(backend, pg_url) as db:
                        got[mode].append(fn(db, claims))
            for mode, runs in got.items():
                wall = statistics.median(r["wall_s"] for r in runs)
                row: dict[str, Any] = {
                    "backend": backend, "sessions": n, "driver": mode,
                    "sessions_per_s": round(n / wall, 1),
                    "steps_per_s": round(runs[0]["steps"] / wall, 1)}
                if mode != "threads":
                    row["loop_lag_median_ms"] = round(
                        statistics.median(r["lag_median_ms"] for r in runs), 2)
                    row["loop_lag_max_ms"] = round(
                        statistics.median(r["lag_max_ms"] for r in runs), 2)
                rows.append(row)
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "rounds": rounds,
            "rows": rows}


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.concurrency")
    parser.add_argument("--sessions", default="8,32", help="concurrent sessions (N)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.json and not Path(args.json).resolve().parent.is_dir():
        parser.error(f"--json {args.json}: no directory {Path(args.json).parent}")
    pg_url = os.environ.get("CLAIMFSM_PG_URL")
    load_before = os.getloadavg()[0]
    backends = [b for b in args.backends.split(",") if b and (b != "postgres" or pg_url)]
    figures = run_bench([int(n) for n in args.sessions.split(",") if n], args.rounds,
                        backends, pg_url)
    figures["load_before"], figures["load_after"] = load_before, os.getloadavg()[0]
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    main()
