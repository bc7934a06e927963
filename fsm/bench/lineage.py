"""What finding a session's lineage costs as the store grows: ``lineage_json`` (its parent
and its forks: what ``show``, the API's session JSON and the session page read) in SQLite
stores of 10,000 and 100,000 sessions, three of them forks of one parent.
``python -m claimfsm.bench.lineage [--json FILE] [--sizes 10000,100000]``.

Two ways side by side: the forks index (``StateStore.forks`` on ``st_catalog.parent``,
written by each fork's own commit) and the scan it replaced (every session's head read,
:func:`claimfsm.state.lineage.scan_forks`, still what a read-only store from before the
index does). Also the time :func:`~claimfsm.state.lineage.fork_mark` adds to a commit of
an ordinary step (it looks at the revision's events; nothing is written). Medians of
repeated warm reads: a measurement, never an assertion in a test.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from claimfsm._base.json import figures_main
from claimfsm.engine.lineage import fork_revision, lineage_json
from claimfsm.state.lineage import fork_mark, scan_forks
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore

__all__ = ["SIZES", "measure", "run"]

SIZES = (10_000, 100_000)
FORKS = 3
_CLAIM = "Canberra became the capital of Australia in 1913."


def _rev(sid: str, rev: int, state: SessionState) -> Revision:
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1,
                    fsm=state.fsm, skill=None if rev == 0 else "step", envelope=None,
                    state=state, ts=f"2026-11-25T00:00:0{rev}Z",
                    events=[] if rev == 0 else [{"type": "Transition", "to": state.fsm}])


def fill(store: StateStore, n: int) -> str:
    """``n`` sessions of two revisions each, ``FORKS`` of them forks of the first (made
    as the driver makes them); the parent's sid."""
    for start in range(0, n - FORKS, 1000):
        with store.batch():
            for i in range(start, min(start + 1000, n - FORKS)):
                sid = f"s{i:06d}"
                state = SessionState(sid=sid, claim=_CLAIM, fsm="PARSE_CLAIM")
                store.create(_rev(sid, 0, state))
                store.commit(_rev(sid, 1, state.model_copy(update={"fsm": "RETRIEVAL"})),
                             expected_rev=0)
    for k in range(FORKS):
        copy = store.fork("s000000", 1, f"fork{k}")
        store.commit(fork_revision(copy, "s000000", f"2026-11-25T01:00:0{k}Z"),
                     expected_rev=copy.rev)
    return "s000000"


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


def measure(store: StateStore, parent: str) -> dict[str, Any]:
    """Median ms of ``lineage_json`` of the parent with the index and with the scan."""
    head = store.head(parent)
    indexed = lineage_json(store, head)
    scanned = scan_forks(store.sessions(), store.heads, parent, 100)
    if indexed["forks"] != scanned or len(scanned) != FORKS:  # both must find the same
        raise SystemExit(f"forks differ: index {indexed['forks']}, scan {scanned}")
    return {"index_ms": _median_ms(lambda: lineage_json(store, head), 50),
            "scan_ms": _median_ms(lambda: scan_forks(store.sessions(), store.heads,
                                                     parent, 100), 5)}


def _mark_us() -> float:
    state = SessionState(sid="s", claim=_CLAIM, fsm="RETRIEVAL")
    step = _rev("s", 1, state)
    reps = 200_000
    start = time.perf_counter()
    for _ in range(reps):
        fork_mark(step) if step.events else None
    return round((time.perf_counter() - start) / reps * 1e6, 3)


def run(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Each size's figures, the per-commit cost of the check and where it ran."""
    results: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                               "load": os.getloadavg()[0], "fork_mark_us": _mark_us(),
                               "sizes": []}
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-lineage-") as tmp:
        for n in sizes:
            with SQLiteStore(Path(tmp) / f"s{n}.db") as store:
                parent = fill(store, n)
                row = {"sessions": n, **measure(store, parent)}
            results["sizes"].append(row)
            print(f"{n:>7} sessions: index {row['index_ms']} ms, scan {row['scan_ms']} ms",
                  file=sys.stderr)
    return results


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    args = sys.argv[1:]
    sizes: tuple[int, ...] = SIZES
    if "--sizes" in args:
        at = args.index("--sizes")
        sizes = tuple(int(x) for x in args[at + 1].split(","))
        del args[at: at + 2]
    figures_main(lambda: run(sizes), args)
