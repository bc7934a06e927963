"""``claimfsm bench compat``: the version check per step, and ``check-compat`` against
``batch`` on the same stored sessions (docs/versioning.md)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

__all__ = ["bench_compat", "compat_vs_batch"]


def compat_vs_batch(n: int, folder: Path) -> dict[str, Any]:
    """Batch ``n`` demo claims onto a fresh SQLite store in this process (the serial
    batch), then check every stored session, in one process and in one per CPU; the
    rates, on the same machine."""
    from claimfsm.batch import read_claims, run_batch
    from claimfsm.bench.versions import claims_file, compat_on_store

    db = folder / "compat.db"
    claims = read_claims(claims_file(folder, n))
    try:
        t0 = time.perf_counter()
        summary = run_batch(claims, str(db), workers=0)
        seconds = time.perf_counter() - t0
    finally:
        claims.close()
    import os

    serial = compat_on_store(db, jobs=1)
    every = os.cpu_count() or 1
    parallel = compat_on_store(db, jobs=every) if every > 1 else serial
    return {"batch_done": summary.done, "batch_seconds": round(seconds, 2),
            "batch_claims_per_s": round(n / seconds, 1), **serial,
            "compat_jobs": parallel["jobs"],
            "compat_parallel_seconds": parallel["compat_seconds"],
            "compat_parallel_sessions_per_s": parallel["compat_sessions_per_s"]}


@click.command("compat", short_help="The version check per step; check-compat vs batch.")
@click.option("--sessions", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Demo claims to batch into the store that check-compat then checks.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the figures to this file as JSON.")
def bench_compat(sessions: int, json_file: str | None) -> None:
    """Measure what versioned machines cost: `version_check_us` (goal <= 1 µs per step),
    then `claimfsm batch` (serial, SQLite) verifying --sessions claims and `claimfsm
    check-compat` checking those stored sessions, in one process and in one per CPU
    (goal: at least batch's claims/s).

    Exit 0 when both goals are met, 1 when one is missed.
    """
    import orjson

    from claimfsm.bench.versions import version_check_us

    out: dict[str, Any] = {"version_check_us": round(version_check_us(), 3)}
    click.echo(f"version check: {out['version_check_us']} µs per step (goal <= 1)")
    with tempfile.TemporaryDirectory() as tmp:
        out.update(compat_vs_batch(sessions, Path(tmp)))
    click.echo(f"batch: {out['batch_claims_per_s']} claims/s ({sessions} claims, "
               f"{out['batch_seconds']} s); check-compat: {out['compat_sessions_per_s']} "
               f"sessions/s in one process ({out['compat_seconds']} s), "
               f"{out['compat_parallel_sessions_per_s']} sessions/s in {out['compat_jobs']} "
               f"({out['compat_parallel_seconds']} s) {out['compat_counts']}")
    if json_file is not None:
        Path(json_file).write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
    if out["version_check_us"] > 1.0 or out["compat_sessions_per_s"] < out[
            "batch_claims_per_s"]:
        sys.exit(1)
