"""The measurements behind ``claimfsm bench``: each function runs one repetition of one
case in a fresh temporary directory and returns its figure.

Timings use ``time.perf_counter`` around the measured calls only (set-up, such as
starting the sessions, is outside). Sessions use a :class:`~claimfsm.skills.context.FixedClock`
so their contents, and therefore the bytes stored, do not depend on when they ran.
See ``docs/bench.md`` for what each figure means.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import orjson

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.bench.workflow import LOOP, LOOP_STEPS, PIPELINE, STAGES
from claimfsm.engine.api import Workflow
from claimfsm.engine.driver import Driver
from claimfsm.skills.context import FixedClock
from claimfsm.state.memory import MemoryStore
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore

__all__ = [
    "PIPELINE_STEPS",
    "bytes_noop",
    "group_commit_us",
    "history_us",
    "loop_session",
    "peak_mb_per_1000",
    "realistic",
    "replay_steps_per_s",
    "rev_read_cached_us",
    "rev_read_us",
    "steps_us",
]

PIPELINE_STEPS = len(STAGES)


def _driver(workflow: Workflow, store: StateStore, prefix: str = "s") -> Driver:
    ids = iter(range(1 << 62))
    return workflow.driver(store, clock=FixedClock(tick=timedelta(microseconds=1)),
                           new_sid=lambda: f"{prefix}{next(ids):06d}", sleep=lambda s: None)


def _step_all(driver: Driver, sids: list[str]) -> None:
    step = driver.step
    for sid in sids:
        for _ in range(PIPELINE_STEPS):
            step(sid)


def _check_done(store: StateStore, sids: list[str]) -> None:
    # A benchmark that silently measured failing steps would be worthless.
    for sid in (sids[0], sids[-1]):
        head = store.head(sid)
        if head.fsm != "DONE" or head.rev != PIPELINE_STEPS:
            raise ClaimFsmError(f"bench session {sid} ended in {head.fsm} at rev {head.rev}",
                                code=ErrorCode.INTERNAL)


def steps_us(tmp: Path, backend: str, sessions: int) -> float:
    """µs per no-op step: ``sessions`` pipeline sessions, each stepped to DONE, on a
    :class:`MemoryStore` (``backend="memory"``) or a fresh SQLite file in that durability.
    """
    store: StateStore = (MemoryStore() if backend == "memory"
                         else SQLiteStore(tmp / f"{backend}.db", durability=backend))  # type: ignore[arg-type]
    with store:
        driver = _driver(PIPELINE, store)
        sids = [driver.start("bench").sid for _ in range(sessions)]
        t0 = time.perf_counter()
        _step_all(driver, sids)
        elapsed = time.perf_counter() - t0
        _check_done(store, sids)
    return elapsed / (sessions * PIPELINE_STEPS) * 1e6


def group_commit_us(tmp: Path, threads: int, sessions_per_thread: int) -> tuple[float, float]:
    """Amortised µs per step with ``durability="group"`` (an fsync per commit batch):
    ``threads`` threads in one process, each stepping its own sessions to DONE. Returns
    ``(µs per step, mean commits per fsync batch)``.
    """
    with SQLiteStore(tmp / "group.db", durability="group") as store:
        drivers = [_driver(PIPELINE, store, prefix=f"t{i}-") for i in range(threads)]
        work = [[d.start("bench").sid for _ in range(sessions_per_thread)] for d in drivers]
        before = store.stats()
        gate = threading.Barrier(threads + 1)
        errors: list[BaseException] = []

        def worker(driver: Driver, sids: list[str]) -> None:
            gate.wait()
            try:
                _step_all(driver, sids)
            except BaseException as exc:  # reported below: a thread must not die silently
                errors.append(exc)

        pool = [threading.Thread(target=worker, args=(d, s)) for d, s in zip(drivers, work,
                                                                              strict=True)]
        for t in pool:
            t.start()
        gate.wait()
        t0 = time.perf_counter()
        for t in pool:
            t.join()
        elapsed = time.perf_counter() - t0
        if errors:
            raise errors[0]
        after = store.stats()
        for sids in work:
            _check_done(store, sids)
    steps = threads * sessions_per_thread * PIPELINE_STEPS
    batches = max(1, after["group_batches"] - before["group_batches"])
    commits = after["group_commits"] - before["group_commits"]
    return elapsed / steps * 1e6, commits / batches


def loop_session(path: Path) -> str:
    """Write one :data:`~claimfsm.bench.workflow.LOOP` session of 100 steps; its id."""
    with SQLiteStore(path) as store:
        driver = _driver(LOOP, store, prefix="loop")
        head = driver.run(driver.start("bench").sid, max_steps=LOOP_STEPS + 1)
        if head.fsm != "DONE" or head.rev != LOOP_STEPS:
            raise ClaimFsmError(f"loop session ended in {head.fsm} at rev {head.rev}",
                                code=ErrorCode.INTERNAL)
        return head.sid


@contextmanager
def _warm(path: Path, sid: str) -> Iterator[SQLiteStore]:
    """A store on ``path`` whose connection has already read ``sid`` (statements
    prepared, session known); callers empty its caches before each timed read.
    """
    with SQLiteStore(path) as store:
        store.get(sid, 0)
        yield store


def rev_read_us(path: Path, sid: str, reads: int, seed: int) -> float:
    """Median µs of ``get(sid, rev)`` for random revisions of a 100-step session, each
    decoded from the file (``clear_cache()`` before every read).
    """
    rng = random.Random(seed)
    samples = []
    with _warm(path, sid) as store:
        for rev in (rng.randint(0, LOOP_STEPS) for _ in range(reads)):
            store.clear_cache()
            t0 = time.perf_counter()
            store.get(sid, rev)
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def rev_read_cached_us(path: Path, sid: str, reads: int, seed: int) -> float:
    """Median µs of ``get(sid, rev)`` for random revisions the store's cache holds (as in
    a process that stepped or read the session)."""
    rng = random.Random(seed)
    samples = []
    with _warm(path, sid) as store:
        store.history(sid)
        for rev in (rng.randint(0, LOOP_STEPS) for _ in range(reads)):
            t0 = time.perf_counter()
            store.get(sid, rev)
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def history_us(path: Path, sid: str, reads: int) -> float:
    """Median µs of ``history(sid)`` (101 revisions), decoded from the file each time."""
    samples = []
    with _warm(path, sid) as store:
        for _ in range(reads):
            store.clear_cache()
            t0 = time.perf_counter()
            revisions = store.history(sid)
            samples.append(time.perf_counter() - t0)
            if len(revisions) != LOOP_STEPS + 1:
                raise ClaimFsmError(f"history holds {len(revisions)} revisions",
                                    code=ErrorCode.INTERNAL)
    return statistics.median(samples) * 1e6


def bytes_noop(path: Path) -> float:
    """Bytes stored per step of the no-op pipeline (rows of revisions after 0, blobs)."""
    with sqlite3.connect(path) as conn:
        rows, size = conn.execute(
            "SELECT count(*), coalesce(sum(length(body) + length(extra) + length(hash)"
            " + length(ts) + length(fsm) + coalesce(length(skill), 0) + 16), 0)"
            " FROM st_revisions WHERE (k & 4294967295) > 0").fetchone()
        blobs = conn.execute("SELECT coalesce(sum(length(data)), 0) FROM st_blobs").fetchone()[0]
    return float(size + blobs) / max(1, int(rows))


def _stored_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT coalesce(sum(length(body) + length(extra) + length(hash) + length(ts)"
            " + length(fsm) + coalesce(length(skill), 0) + 16), 0) FROM st_revisions"
        ).fetchone()[0]
        blobs = conn.execute("SELECT coalesce(sum(length(data)), 0) FROM st_blobs").fetchone()[0]
    return int(rows) + int(blobs)


def _snapshot_bytes(store: StateStore) -> tuple[int, int]:
    """What a checkpointer writing a full copy at every step stores: ``(the state, the
    envelope and events, and the row's metadata per step; the state alone per step)``.
    """
    total = states = 0
    for sid in store.sessions():
        for r in store.history(sid):
            state = len(orjson.dumps(r.state.model_dump(mode="json")))
            extra = len(orjson.dumps([r.envelope, r.events]))
            states += state
            total += state + extra + 32 + len(r.ts) + len(r.fsm) + len(r.skill or "") + 16
    return total, states


def realistic(tmp: Path, claims: list[str]) -> dict[str, float]:
    """Run real claims through the real engine on SQLite; storage ratio against full
    snapshots per step, and cold read figures on those sessions.
    """
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.runtime import Engine  # the real engine: skills, tools, evidence index

    path = tmp / "realistic.db"
    clock = FixedClock(tick=timedelta(milliseconds=1))
    with Engine.open(path, config=EngineConfig(clock=clock)) as eng:
        sids = []
        for claim in claims:
            head = eng.driver.run(eng.driver.start(claim).sid)
            sids.append(head.sid)
        full, states = _snapshot_bytes(eng.store)
        steps = sum(eng.store.head(s).rev for s in sids)
    stored = _stored_bytes(path)
    reads, hists = [], []
    rng = random.Random(7)
    for sid in sids:
        with _warm(path, sid) as store:
            last = store.head(sid).rev
            for _ in range(3):
                store.clear_cache()
                t0 = time.perf_counter()
                store.get(sid, rng.randint(0, last))
                reads.append(time.perf_counter() - t0)
            store.clear_cache()
            t0 = time.perf_counter()
            store.history(sid)
            hists.append(time.perf_counter() - t0)
    return {
        "bytes_ratio": stored / full,
        "stored_bytes": float(stored),
        "snapshot_bytes": float(full),
        "state_snapshot_bytes": float(states),
        "bytes_ratio_state_only": stored / states,
        "steps": float(steps),
        "rev_read_us": statistics.median(reads) * 1e6,
        "history_us": statistics.median(hists) * 1e6,
    }


def peak_mb_per_1000(sessions: int = 1000) -> float:
    """Peak traced Python memory (MB, 10^6 bytes) while ``sessions`` pipeline sessions
    live at once in a :class:`MemoryStore` (every revision kept), scaled to 1000.
    """
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        store = MemoryStore()
        driver = _driver(PIPELINE, store)
        sids = [driver.start("bench").sid for _ in range(sessions)]
        for _ in range(PIPELINE_STEPS):
            for sid in sids:
                driver.step(sid)
        _check_done(store, sids)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak / 1e6 * 1000 / sessions


def replay_steps_per_s(sessions: int) -> float:
    """Steps per second of :func:`claimfsm.replay.runner.replay_record` in strict mode over the
    records of ``sessions`` no-op pipeline sessions (every envelope compared byte for
    byte; each replay builds its own driver and in-memory store).
    """
    from claimfsm.replay.runner import replay_record
    from claimfsm.replay.write import export_record

    store = MemoryStore()
    driver = _driver(PIPELINE, store)
    sids = [driver.start("bench").sid for _ in range(sessions)]
    _step_all(driver, sids)
    machine, bindings = PIPELINE.definition, PIPELINE.bindings
    records = [export_record(store, sid, tools=None, bindings=bindings, machine=machine.name,
                             finals=machine.finals) for sid in sids]
    steps = 0
    t0 = time.perf_counter()
    for record in records:
        report = replay_record(record, "strict", machine=machine, bindings=bindings)
        if not report.ok:
            raise ClaimFsmError(f"replay of {report.sid} diverged: {report.divergence}",
                                code=ErrorCode.INTERNAL)
        steps += report.steps
    elapsed = time.perf_counter() - t0
    return steps / elapsed
