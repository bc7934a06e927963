"""What the inspector's session page costs as the session grows: the page served for a
SQLite session of 100 and of 10,000 revisions, ``python -m claimfsm.ui.bench_session
[--json FILE]`` (``make bench-ui-session``).

Each session is grown step by step with a real session's final state (a counter moves,
so only the length grows), then served by the app in process (Starlette's test client: the
handler, the store's reads and the HTML, no socket). Three pages are timed: the newest
(``/sessions/SID``), one in the middle (``?before=N/2``) and the live panels fragment the
page's script polls; beside them, the page as it was built before 2026-11-25, from the
whole history (``Service.history``, every revision rendered). Reads are cold: the store's
revision cache is cleared before each. Median milliseconds of 9 requests (the whole
history: 5, or 3 beyond 1,000 revisions): a measurement, never an assertion in a test.
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
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.engine.version import history_version
from claimfsm.skills.context import FixedClock
from claimfsm.state.model import Revision, SessionState, trusted
from claimfsm.state.sqlite.store import SQLiteStore

__all__ = ["SIZES", "measure", "run"]

SIZES = (100, 10_000)
CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."


def _grow(db: Path, n: int) -> str:
    """A session ``s`` of ``n`` revisions in ``db``, each the size of a finished session's."""
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        base = eng.driver.run(eng.driver.start(CLAIM, sid="s").sid).state

    def revision(rev: int) -> Revision:
        state: SessionState = base.model_copy(update={"rounds": rev, "memory": {"tick": rev}})
        return trusted(Revision, {"sid": "s", "rev": rev, "parent_rev": rev - 1 if rev else None,
                                  "fsm": state.fsm, "skill": "tick" if rev else None,
                                  "envelope": None, "state": state,
                                  "ts": f"2026-11-25T00:00:00.{rev:06d}+00:00", "events": []})

    with SQLiteStore(db) as store:
        store.create(revision(0))
        for rev in range(1, n):
            store.commit(revision(rev), expected_rev=rev - 1)
    return "s"


def _median_ms(read: Callable[[], object], clear: Callable[[], None], reps: int) -> float:
    read()  # untimed: the first request compiles templates' regexes and pages the file in
    times = []
    for _ in range(reps):
        clear()
        t0 = time.perf_counter()
        read()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(db: Path, sid: str) -> dict[str, Any]:
    """Median ms of the session page (newest, middle), the panels fragment, and the page
    rendered from the whole history, for ``sid`` in ``db``."""
    from starlette.testclient import TestClient

    from claimfsm.ui.app import create_app
    from claimfsm.ui.pages import session_page
    from claimfsm.ui.service import Service

    service = Service.open(str(db), config=EngineConfig(create=False, seed=False))
    store = service.engine.store
    clear = getattr(store, "clear_cache", lambda: None)
    n = store.head(sid).rev + 1

    def get(url: str) -> Callable[[], object]:
        def read() -> object:
            r = client.get(url)
            assert r.status_code == 200, r.text[:300]
            return r.text
        return read

    def whole() -> object:
        revisions = service.history(sid)
        return session_page(service.engine.driver.definition, revisions[-1], revisions,
                            history_version(revisions))

    try:
        with TestClient(create_app(service)) as client:
            out: dict[str, Any] = {
                "revisions": n,
                "newest_ms": _median_ms(get(f"/sessions/{sid}"), clear, 9),
                "middle_ms": _median_ms(get(f"/sessions/{sid}?before={n // 2}"), clear, 9),
                "panels_ms": _median_ms(get(f"/sessions/{sid}/panels"), clear, 9),
                "whole_history_ms": _median_ms(whole, clear, 3 if n > 1000 else 5),
                "page_bytes": len(str(get(f"/sessions/{sid}")())),
            }
    finally:
        service.close()
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def run(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Every size: ``{"sqlite": [measure(...), ...]}`` and where it ran."""
    results: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    rows = []
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-session-") as tmp:
        for n in sizes:
            db = Path(tmp) / f"s{n}.db"
            rows.append(measure(db, _grow(db, n)))
            print(f"{n:>6} revisions: " + "  ".join(
                f"{k} {v}" for k, v in rows[-1].items() if k != "revisions"), file=sys.stderr)
    results["sqlite"] = rows
    return results


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    figures_main(run)
