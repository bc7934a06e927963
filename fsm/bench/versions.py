"""What versioned machines cost: the version check per step, and ``check-compat`` on a
store of many sessions against ``batch`` on the same claims.

``python -m claimfsm.bench.versions [--sessions N] [--json FILE]`` (``make bench-compat``):

- ``version_check_us``: what the version check adds to each step, the statements the
  driver runs for it (the look-up of the head it last saw for the session before the
  step, remembering the new head after the commit) over the sessions of a no-op
  pipeline, minus the same loop without them; goal <= 1 µs. (A difference of two step
  timings could not resolve it: steps vary by more than that from run to run.)
- ``batch_claims_per_s``: ``run_batch`` of N demo claims (cycled, distinct ids) in this
  process onto a fresh SQLite file (the serial batch, one core);
- ``compat_sessions_per_s``: :func:`claimfsm.replay.compat.check_store` over those N
  stored sessions, the store opened read-only (what ``claimfsm check-compat --db``
  does, without printing); goal: at least ``batch_claims_per_s``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

__all__ = ["compat_vs_batch", "main", "version_check_us"]


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


def _claims_file(folder: Path, n: int) -> Path:
    from claimfsm.engine.runtime import FIXTURES

    demo = [item["claim"] for item in orjson.loads((FIXTURES / "demo_claims.json").read_bytes())]
    path = folder / "claims.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"id": i, "claim": demo[i % len(demo)]}) + b"\n"
                              for i in range(n)))
    return path


def compat_vs_batch(n: int, folder: Path) -> dict[str, Any]:
    """Batch ``n`` claims onto a fresh store, then check every stored session."""
    from claimfsm.batch import read_claims, run_batch
    from claimfsm.replay.compat import check_store, summarize
    from claimfsm.state.open import open_store

    db = folder / "compat.db"
    claims = read_claims(_claims_file(folder, n))
    try:
        t0 = time.perf_counter()
        summary = run_batch(claims, str(db), workers=0)
        batch_s = time.perf_counter() - t0
    finally:
        claims.close()
    with open_store(str(db), readonly=True) as store:
        sids = list(store.sessions())
        t0 = time.perf_counter()
        checks = list(check_store(store, sids))
        compat_s = time.perf_counter() - t0
    counted = summarize(checks, "")
    return {"sessions": len(sids), "batch_done": summary.done,
            "batch_seconds": round(batch_s, 2), "batch_claims_per_s": round(n / batch_s, 1),
            "compat_seconds": round(compat_s, 2),
            "compat_sessions_per_s": round(len(sids) / compat_s, 1),
            "compat_counts": counted.counts}


def main(argv: list[str] | None = None) -> int:
    """Run both measurements; print them (and write ``--json``)."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.versions")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--json", dest="out", default=None)
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"version_check_us": round(version_check_us(), 3)}
    print(f"version check: {out['version_check_us']} µs per step (goal <= 1)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out.update(compat_vs_batch(args.sessions, Path(tmp)))
    print(f"batch: {out['batch_claims_per_s']} claims/s ({out['sessions']} claims, "
          f"{out['batch_seconds']} s); check-compat: {out['compat_sessions_per_s']} "
          f"sessions/s ({out['compat_seconds']} s) {out['compat_counts']}")
    if args.out:
        Path(args.out).write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
    ok = out["version_check_us"] <= 1.0 and out["compat_sessions_per_s"] >= out[
        "batch_claims_per_s"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
