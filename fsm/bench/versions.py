"""What versioned machines cost: the version check per step, and ``check-compat`` on a
store of many sessions (``claimfsm bench compat``, ``make bench-compat``, which also
times ``batch`` writing that store: the batch runner is above this layer):

- ``version_check_us``: what the version check adds to each step, the statements the
  driver runs for it (the look-up of the head it last saw for the session before the
  step, remembering the new head after the commit) over the sessions of a no-op
  pipeline, minus the same loop without them; goal <= 1 µs. (A difference of two step
  timings could not resolve it: steps vary by more than that from run to run.)
- ``batch_claims_per_s``: ``run_batch`` of N demo claims (cycled, distinct ids) in this
  process onto a fresh SQLite file (the serial batch, one core);
- ``compat_sessions_per_s``: the check of those N stored sessions, the store opened
  read-only (what ``claimfsm check-compat --db`` does, without printing), in one
  process and in one per CPU; goal: at least ``batch_claims_per_s``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

__all__ = ["claims_file", "compat_on_store", "version_check_us"]


def version_check_us(sessions: int = 2000, rounds: int = 20) -> float:
    """µs the version check adds to one step (median of ``rounds``)."""
    import statistics

    from claimfsm.bench.cases import _driver
    from claimfsm.bench.workflow import PIPELINE
    from claimfsm.state.memory import MemoryStore

    store = MemoryStore()
    driver = _driver(PIPELINE, store)
    heads = [driver.start("bench") for _ in range(sessions)]
    figures = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for head in heads:  # as in Driver._step, before the step and after its commit
            sid = head.sid
            seen = driver._seen.get(sid)
            if (seen is None or seen[0] != head.rev or seen[1] is not driver.version) \
                    and head.fsm not in driver._finals:
                raise AssertionError("the bench sessions must take the fast path")
            driver._remember(sid, head.rev)
        t1 = time.perf_counter()
        for head in heads:  # the loop alone
            sid = head.sid
        t2 = time.perf_counter()
        figures.append(((t1 - t0) - (t2 - t1)) / sessions * 1e6)
    return float(statistics.median(figures))


def claims_file(folder: Path, n: int) -> Path:
    """A batch input of ``n`` demo claims (cycled; ids ``0..n-1``, so every session is
    its own)."""
    from claimfsm.engine.runtime import FIXTURES

    demo = [item["claim"] for item in orjson.loads((FIXTURES / "demo_claims.json").read_bytes())]
    path = folder / "claims.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"id": i, "claim": demo[i % len(demo)]}) + b"\n"
                              for i in range(n)))
    return path


def compat_on_store(db: Path, jobs: int = 1) -> dict[str, Any]:
    """Time the check of every session of ``db`` (opened read-only) in ``jobs`` processes,
    what ``claimfsm check-compat --db --jobs`` does, without printing."""
    from claimfsm.replay.compat import checks_in_parallel, summarize
    from claimfsm.state.open import open_store

    with open_store(str(db), readonly=True) as store:
        sids = list(store.sessions())
    t0 = time.perf_counter()
    checks = list(checks_in_parallel(sids, jobs, db=str(db)))
    seconds = time.perf_counter() - t0
    return {"sessions": len(sids), "jobs": jobs, "compat_seconds": round(seconds, 2),
            "compat_sessions_per_s": round(len(sids) / seconds, 1),
            "compat_counts": summarize(checks, "").counts}
