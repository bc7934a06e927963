"""What ``claimfsm prune`` costs on a large store: 100,000 finished sessions (and 1% still
running, which must stay), pruned with the function the command runs, on SQLite and
(given a server) PostgreSQL; then ``compact``, which reclaims the space.

The store is built through the store API (create and two commits per session: a small
first state, a step with a blob of its own and a page shared by every session, the
final state), so what is pruned is what the engine writes. Figures are wall seconds of
one run: listing the finished sessions, deleting them in batches, the blob sweep, and
the compaction after; a measurement, never an assertion in a test. ``claimfsm bench
prune`` (``make bench-prune``).
"""

from __future__ import annotations

import os
import platform
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claimfsm.state.model import Revision, SessionState, trusted
from claimfsm.state.retention import FINAL_STATES, prune
from claimfsm.state.store import StateStore

__all__ = ["build", "format_table", "run_bench"]

_PAGE = {"text": "A page every session quotes, stored once however many use it. " * 20}
_CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
Progress = Callable[[str], None]


def _revision(sid: str, rev: int, state: SessionState, ts: str) -> Revision:
    return trusted(Revision, {"sid": sid, "rev": rev, "parent_rev": rev - 1 if rev else None,
                              "fsm": state.fsm, "skill": "step" if rev else None,
                              "envelope": None, "state": state, "ts": ts, "events": []})


def build(store: StateStore, sessions: int, progress: Progress) -> None:
    """``sessions`` sessions, one in a hundred left running (never pruned)."""
    for i in range(sessions):
        sid = f"p{i:07d}"
        state = SessionState(sid=sid, claim=f"Claim number {i}.", fsm="PARSE_CLAIM")
        store.create(_revision(sid, 0, state, "2026-01-01T00:00:00+00:00"))
        state = state.model_copy(update={
            "fsm": "RETRIEVAL", "pages": {"https://example.org/shared": _PAGE},
            "memory": {"note": f"evidence of session {i}: " + "x" * 300}})
        store.commit(_revision(sid, 1, state, "2026-01-01T00:00:01+00:00"), expected_rev=0)
        if i % 100 != 99:
            final = state.model_copy(update={"fsm": "DONE" if i % 7 else "FAILED"})
            store.commit(_revision(sid, 2, final, "2026-01-01T00:00:02+00:00"), expected_rev=1)
        if (i + 1) % 10_000 == 0:
            progress(f"built {i + 1:,} of {sessions:,} sessions")


def _measure(store: StateStore, built: float, sessions: int, progress: Progress,
             size: Callable[[], int]) -> dict[str, Any]:
    before = size()
    listed = time.perf_counter()
    ended = store.ended(FINAL_STATES)
    listed = time.perf_counter() - listed

    def step(done: int, total: int) -> None:
        if done % 20_000 == 0 or done == total:
            progress(f"pruned {done:,} of {total:,}")

    t0 = time.perf_counter()
    report = prune(store, _CUTOFF, actor="bench", at="2026-11-25T00:00:00+00:00",
                   progress=step)
    pruned = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.compact()
    compacted = time.perf_counter() - t0
    left = len(store.sessions())
    return {"sessions": sessions, "finished": len(ended), "deleted": report.deleted,
            "left": left, "build_s": round(built, 1), "list_s": round(listed, 2),
            "prune_s": round(pruned, 2),
            "prune_per_s": round(report.deleted / pruned) if pruned else None,
            "compact_s": round(compacted, 2), "bytes_before": before, "bytes_after": size()}


def _sqlite(sessions: int, where: Path, progress: Progress) -> dict[str, Any]:
    from claimfsm.state.sqlite.store import SQLiteStore

    path = where / "prune.db"

    def size() -> int:
        return sum(p.stat().st_size for p in where.iterdir() if p.name.startswith("prune.db"))

    t0 = time.perf_counter()
    with SQLiteStore(path) as store:
        build(store, sessions, progress)
    built = time.perf_counter() - t0
    with SQLiteStore(path) as store:
        return {"backend": "sqlite", **_measure(store, built, sessions, progress, size)}


def _postgres(sessions: int, url: str, progress: Progress) -> dict[str, Any]:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    name = "bench_prune_" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    scoped = f"{url}{joiner}options=-csearch_path%3D{name}"

    def size() -> int:
        with psycopg.connect(scoped, autocommit=True) as conn:
            row = conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (name,)).fetchone()
            return int(row[0] or 0) if row else 0

    try:
        t0 = time.perf_counter()
        # Built without waiting for each commit's flush (the build is not measured).
        with PostgresStore(f"{scoped}%20-csynchronous_commit%3Doff") as store:
            build(store, sessions, progress)
        built = time.perf_counter() - t0
        with PostgresStore(scoped) as store:
            return {"backend": "postgres", **_measure(store, built, sessions, progress, size)}
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


def run_bench(sessions: int, pg: str | None, where: Path | None,
              progress: Progress) -> dict[str, Any]:
    """Both backends (PostgreSQL with ``pg``); the store files go in ``where`` (a temp
    folder by default, removed afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix="claimfsm-prune-", dir=where))
    cases = []
    try:
        progress("sqlite")
        cases.append(_sqlite(sessions, folder, progress))
        if pg is not None:
            progress("postgres")
            cases.append(_postgres(sessions, pg, progress))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "sqlite": sqlite3.sqlite_version, "platform": platform.platform(),
                        "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
            "cases": cases}


def format_table(report: dict[str, Any]) -> str:
    """One line per backend."""
    lines = [f"{'backend':<9} {'sessions':>9} {'deleted':>8} {'left':>6} {'build s':>8} "
             f"{'list s':>7} {'prune s':>8} {'del/s':>7} {'compact s':>10} "
             f"{'MB before':>10} {'MB after':>9}"]
    for c in report["cases"]:
        lines.append(
            f"{c['backend']:<9} {c['sessions']:>9,} {c['deleted']:>8,} {c['left']:>6,} "
            f"{c['build_s']:>8} {c['list_s']:>7} {c['prune_s']:>8} {c['prune_per_s'] or '-':>7} "
            f"{c['compact_s']:>10} {c['bytes_before'] / 1e6:>10.1f} {c['bytes_after'] / 1e6:>9.1f}")
    return "\n".join(lines)
