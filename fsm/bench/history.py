"""What one page of a session's history costs as the session grows: 100 revisions read at
the start, the middle and the end of sessions of 100, 4,000 and 10,000 revisions, on
SQLite, in memory and (with ``CLAIMFSM_PG_URL`` set, as ``make bench-history`` does) on
PostgreSQL. ``python -m claimfsm.bench.history [--json FILE]``.

Two ways of reading the page side by side: ``history_page`` (by key: the rows from the
nearest snapshot through the page) and the whole history sliced, which is how the HTTP
API's history page was served before. Reads are cold (``clear_cache()`` first), as a
page of a long session is in a server whose cache holds 1,024 revisions. Median
milliseconds of 5 reads at each place (3 for the whole history beyond 1,000 revisions):
a measurement, never an assertion in a test.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from claimfsm._base.json import figures_main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import FixedClock
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState, trusted
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore

__all__ = ["PAGE", "SIZES", "measure", "run"]

SIZES = (100, 4_000, 10_000)
PAGE = 100
CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."


def _state() -> SessionState:
    """A real session's final state (subclaims, evidence, judgments, verdict, pages)."""
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        return eng.driver.run(eng.driver.start(CLAIM, sid="bench").sid).state


def _grow(store: StateStore, sid: str, n: int, base: SessionState) -> None:
    """Revisions ``0..n-1`` of ``sid``: each a step that keeps the state's size (a counter
    moves), so the session's length is the only thing that grows."""
    def revision(rev: int) -> Revision:
        state = base.model_copy(update={"sid": sid, "rounds": rev, "memory": {"tick": rev}})
        return trusted(Revision, {"sid": sid, "rev": rev, "parent_rev": rev - 1 if rev else None,
                                  "fsm": state.fsm, "skill": "tick" if rev else None,
                                  "envelope": None, "state": state,
                                  "ts": f"2026-11-25T00:00:00.{rev:06d}+00:00", "events": []})

    store.create(revision(0))
    for rev in range(1, n):
        store.commit(revision(rev), expected_rev=rev - 1)


def _median_ms(read: Callable[[], object], clear: Callable[[], None], reps: int) -> float:
    read()  # untimed: the first call imports, prepares statements and pages the file in
    times = []
    for _ in range(reps):
        clear()
        t0 = time.perf_counter()
        read()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(store: StateStore, sid: str, n: int) -> dict[str, Any]:
    """Median ms of a cold page at the start, middle and end of ``sid`` (``n`` revisions),
    by key and as a slice of the whole history."""
    clear = getattr(store, "clear_cache", lambda: None)
    out: dict[str, Any] = {"revisions": n}
    for where, start in (("first", 0), ("middle", n // 2), ("last", max(0, n - PAGE))):
        page = _median_ms(partial(store.history_page, sid, start, PAGE), clear, 5)
        whole = _median_ms(partial(_sliced, store, sid, start), clear, 3 if n > 1000 else 5)
        out[where] = {"page_ms": round(page, 3), "whole_ms": round(whole, 3)}
    return out


def _sliced(store: StateStore, sid: str, start: int) -> list[Revision]:
    """The page cut from the whole history (how the HTTP API served one before)."""
    return list(store.history(sid))[start: start + PAGE]


Backend = tuple[str, Callable[[], StateStore], Callable[[StateStore], StateStore]]


def _backends(tmp: Path) -> list[Backend]:
    """``(name, new empty store, cold reader of it)`` for each backend present."""
    files = iter(range(1_000_000))

    def sqlite() -> StateStore:
        return SQLiteStore(tmp / f"h{next(files)}.db")

    def sqlite_reader(store: StateStore) -> StateStore:
        assert isinstance(store, SQLiteStore)
        store.close()
        return SQLiteStore(store.path, readonly=True)

    backends: list[Backend] = [("sqlite", sqlite, sqlite_reader),
                               ("memory", MemoryStore, lambda s: s)]
    url = os.environ.get("CLAIMFSM_PG_URL")
    if url:
        backends.append(("postgres", _postgres(url), lambda s: s))
    return backends


def _postgres(url: str) -> Callable[[], StateStore]:
    import psycopg

    from claimfsm.state.postgres import PostgresStore

    def new() -> StateStore:
        name = "bench_" + uuid.uuid4().hex[:10]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        joiner = "&" if "?" in url else "?"
        return PostgresStore(f"{url}{joiner}options=-csearch_path%3D{name}")

    return new


def run(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Every backend at every size: ``{backend: [measure(...), ...]}`` and where it ran."""
    base = _state().model_copy(update={"sid": "s"})
    results: dict[str, Any] = {"page": PAGE, "python": platform.python_version(),
                               "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-history-") as tmp:
        for name, new, reader in _backends(Path(tmp)):
            rows = []
            for n in sizes:
                store = new()
                _grow(store, "s", n, base)
                view = reader(store)
                try:
                    rows.append(measure(view, "s", n))
                finally:
                    view.close()
                    store.close()
                print(f"{name:<9} {n:>6} revisions: " + "  ".join(
                    f"{k} {v['page_ms']:.2f} ms / whole {v['whole_ms']:.1f} ms"
                    for k, v in rows[-1].items() if isinstance(v, dict)), file=sys.stderr)
            results[name] = rows
    return results


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    figures_main(run)
