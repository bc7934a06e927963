"""What reading without writing costs (docs/storage.md, "Readers never write").

``python -m claimfsm.bench.readers [--sessions N] [--json FILE]`` builds a store of N
sessions (20 revisions each, a 13 KB page every 5th) and times, for each way a reader
finds the files (``main``: one closed file; ``shared``: a killed writer's WAL and -shm;
``copy``: that WAL without its -shm), opening the store read-only and reading every
session's head from a cold cache; then what a writable store pays at its first write for
having read without writing until then. SQLite's own ``mode=ro`` (which creates the
-wal and -shm) is the reference. Medians of five runs: a measurement, never an assertion.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from claimfsm._base.sqlite_read import ReadOnlyLink
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import connect
from claimfsm.state.sqlite.probe import probe
from claimfsm.state.sqlite.schema import init_schema

__all__ = ["build", "measure", "run"]

_REVS = 20
_PAGE = "A page of evidence text. " * 520  # ~13 KB
# The killed writer: one more session committed, then the process dies without closing.
_KILLED = """
import os, sys
from claimfsm.state.contract import make_revision
from claimfsm.state.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
for n in range(50):
    store.create(make_revision(f"killed-{n}", 0))
os._exit(0)
"""


def build(db: Path, sessions: int) -> None:
    """``sessions`` sessions of :data:`_REVS` revisions each in a closed store ``db``."""
    with SQLiteStore(db) as store:
        for n in range(sessions):
            sid = f"s{n}"
            state = make_state(sid)
            store.create(make_revision(sid, 0, state))
            for rev in range(1, _REVS):
                pages = dict(state.pages)
                if rev % 5 == 0:
                    pages[f"p{rev}"] = {"text": f"{_PAGE}{sid} {rev}"}
                state = state.model_copy(update={"rounds": rev, "pages": pages})
                store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)


def _layout(src: Path, folder: Path, layout: str) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    db = folder / "s.db"
    shutil.copy(src, db)
    if layout != "main":
        subprocess.run([sys.executable, "-c", _KILLED, str(db)], check=True)
        (folder / "s.db-writer").unlink(missing_ok=True)
        if layout == "copy":
            (folder / "s.db-shm").unlink()
    return db


def _median(fn: Callable[[], float], runs: int = 5) -> float:
    return statistics.median(fn() for _ in range(runs))


def _open_and_read(db: Path) -> tuple[float, float, str]:
    start = time.perf_counter()
    store = SQLiteStore(db, readonly=True)
    opened = time.perf_counter()
    try:
        sids = store.sessions()
        for sid in sids:
            store.head(sid)
        mode = store._link.mode if store._link is not None else "-"
    finally:
        store.close()
    return opened - start, (time.perf_counter() - opened) / max(1, len(sids)), mode


def _sqlite_ro(db: Path) -> tuple[float, float]:
    # The reference: SQLite's read-only mode, which creates the -wal and -shm.
    start = time.perf_counter()
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    opened = time.perf_counter()
    conn.close()
    return opened - start, 0.0


def measure(sessions: int = 200) -> dict[str, Any]:
    """The figures, as :func:`run` prints and writes them."""
    out: dict[str, Any] = {"sessions": sessions, "revisions_per_session": _REVS}
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-readers-") as tmp:
        base = Path(tmp)
        src = base / "src.db"
        build(src, sessions)
        out["file_mb"] = round(src.stat().st_size / 1e6, 2)
        for layout in ("main", "shared", "copy"):
            times: list[tuple[float, float, str]] = []
            for n in range(5):
                times.append(_open_and_read(_layout(src, base / f"{layout}{n}", layout)))
            out[layout] = {
                "mode": times[0][2],
                "open_ms": round(statistics.median(t[0] for t in times) * 1e3, 2),
                "head_us": round(statistics.median(t[1] for t in times) * 1e6, 1),
            }
        db = _layout(src, base / "probe", "main")
        out["probe_ms"] = round(_median(lambda: _timed(lambda: probe(db))) * 1e3, 2)
        out["sqlite_mode_ro_open_ms"] = round(
            _median(lambda: _sqlite_ro(_layout(src, base / "ro", "main"))[0]) * 1e3, 2)
        out["first_write"] = _first_write(src, base)
        out["guard"] = _guard(src, base)
    return out


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _first_write(src: Path, base: Path) -> dict[str, float]:
    # A writable store reads without writing until its first commit, which then opens
    # the write connection: its open, that commit and the next, against opening the
    # write connection alone (what every writable open paid before, at once).
    opened, first, second, writer, eager = [], [], [], [], []
    for n in range(5):
        db = _layout(src, base / f"w{n}", "main")
        start = time.perf_counter()
        with SQLiteStore(db) as store:
            opened.append(time.perf_counter() - start)
            state = store.head("s0").state
            one = make_revision("s0", _REVS, state.model_copy(update={"rounds": _REVS}))
            two = make_revision("s0", _REVS + 1, state.model_copy(update={"rounds": 0}))
            first.append(_timed(partial(store.commit, one, expected_rev=_REVS - 1)))
            second.append(_timed(partial(store.commit, two, expected_rev=_REVS)))
        db = _layout(src, base / f"c{n}", "main")
        start = time.perf_counter()
        conn = connect(str(db), "normal", 30.0)
        init_schema(conn, 30.0)
        writer.append(time.perf_counter() - start)
        conn.close()
        db = _layout(src, base / f"e{n}", "main")
        with SQLiteStore(db) as store:  # the writer opened up front, as before
            store._writer()
            state = store.head("s0").state
            one = make_revision("s0", _REVS, state.model_copy(update={"rounds": _REVS}))
            eager.append(_timed(partial(store.commit, one, expected_rev=_REVS - 1)))
    return {"open_ms": _ms(opened), "first_commit_ms": _ms(first),
            "next_commit_ms": _ms(second), "writer_open_ms": _ms(writer),
            "first_commit_writer_open_ms": _ms(eager)}


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1e3, 2)


def _guard(src: Path, base: Path) -> dict[str, float]:
    # What one read pays for being checked against a writer (main mode: three stats)
    # against the same statement on a plain read-only connection.
    db = _layout(src, base / "guard", "main")
    link = ReadOnlyLink(str(db))
    plain = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    sql = "SELECT k FROM st_revisions WHERE k = 1"
    try:
        n = 20_000
        guarded = _timed(lambda: [link.run(lambda c: c.execute(sql).fetchone())
                                  for _ in range(n)]) / n
        bare = _timed(lambda: [plain.execute(sql).fetchone() for _ in range(n)]) / n
    finally:
        link.close()
        plain.close()
    return {"read_us": round(guarded * 1e6, 2), "plain_read_us": round(bare * 1e6, 2)}


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print a table, write ``--json FILE`` if asked."""
    args = list(sys.argv[1:] if argv is None else argv)
    sessions = int(args[args.index("--sessions") + 1]) if "--sessions" in args else 200
    json_path = args[args.index("--json") + 1] if "--json" in args else None
    if json_path is not None and not os.path.isdir(os.path.dirname(json_path) or "."):
        sys.exit(f"--json {json_path}: no such folder")
    figures = measure(sessions)
    print(f"store: {figures['sessions']} sessions x {_REVS} revisions, "
          f"{figures['file_mb']} MB")
    print(f"{'files':<8} {'mode':<7} {'open ms':>8} {'head us':>8}")
    for layout in ("main", "shared", "copy"):
        row = figures[layout]
        print(f"{layout:<8} {row['mode']:<7} {row['open_ms']:>8} {row['head_us']:>8}")
    print(f"probe: {figures['probe_ms']} ms; SQLite mode=ro open (creates -wal/-shm): "
          f"{figures['sqlite_mode_ro_open_ms']} ms")
    fw, guard = figures["first_write"], figures["guard"]
    print(f"writable store: open {fw['open_ms']} ms, first commit {fw['first_commit_ms']} "
          f"ms (opens the writer), next {fw['next_commit_ms']} ms; the write connection "
          f"alone opens in {fw['writer_open_ms']} ms; with it open, the first commit takes "
          f"{fw['first_commit_writer_open_ms']} ms")
    print(f"one read in main mode: {guard['read_us']} us, {guard['plain_read_us']} us on a "
          "plain connection")
    if json_path is not None:
        Path(json_path).write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2) + b"\n")
    return figures


if __name__ == "__main__":
    run()
