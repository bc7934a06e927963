"""The batch benchmark (``claimfsm bench batch``, ``make bench-batch``): claims/s of
``claimfsm batch`` serial on SQLite and on Ray (SQLite, PostgreSQL), and compare-and-set
commits/s of :class:`~claimfsm.state.postgres.PostgresStore` with 1 and 8 writer
processes.

Without a PostgreSQL URL (``--pg``, or the ``CLAIMFSM_PG_URL`` variable) the PostgreSQL
rows are left out. Each PostgreSQL case runs in a schema of its own, dropped afterwards.
With ``--data`` (a Climate-FEVER folder: ``corpus.jsonl``, ``dev.jsonl``) the same cases
also run on its first dev claims against its corpus, where a claim costs several times a
demo claim. The command's options live in ``claimfsm.cli.bench``; this module measures.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.batch.claims import BatchClaim
from claimfsm.batch.runner import run_batch
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.model import Revision, SessionState

__all__ = ["commit_rate", "demo_claims", "format_table", "run_bench"]

COMMITS_PER_WRITER = 600


def demo_claims(n: int) -> list[BatchClaim]:
    """The bundled demo claims repeated to ``n`` (ids 0..n-1)."""
    texts = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
    return [BatchClaim(id=i, claim=texts[i % len(texts)]) for i in range(n)]


def _schema_url(url: str) -> tuple[str, str]:
    import psycopg

    name = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    return name, f"{url}{joiner}options=-csearch_path%3D{name}"


def _drop_schema(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")


def _writer(url: str, writer: int, commits: int, go: Any, out: Any) -> None:
    """One process: a session of its own, ``commits`` revisions like a pipeline step's."""
    from claimfsm.state.postgres import PostgresStore

    with PostgresStore(url) as store:
        sid = f"w{writer}"
        state = SessionState(sid=sid, claim="Sea levels are rising.", fsm="RETRIEVAL")
        store.create(Revision(sid=sid, rev=0, parent_rev=None, fsm=state.fsm, skill=None,
                              envelope=None, state=state, ts="t0"))
        go.wait()
        began = time.perf_counter()
        for rev in range(1, commits + 1):
            state = state.model_copy(update={"rounds": rev,
                                             "steps": [*state.steps, {"n": rev, "ok": True}]})
            store.commit(Revision(sid=sid, rev=rev, parent_rev=rev - 1, fsm=state.fsm,
                                  skill="retrieve", envelope={"s": "ok", "rb": "none"},
                                  state=state, ts=f"t{rev}"), expected_rev=rev - 1)
        out.put(time.perf_counter() - began)


def commit_rate(url: str, writers: int, commits: int = COMMITS_PER_WRITER) -> dict[str, Any]:
    """CAS commits/s of ``writers`` processes, each on its own session, started together."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, w, commits, go, out))
             for w in range(writers)]
    for proc in procs:
        proc.start()
    time.sleep(2.0)  # every writer connected and created its session
    began = time.perf_counter()
    go.set()
    for proc in procs:
        proc.join()
    wall = time.perf_counter() - began
    if any(proc.exitcode != 0 for proc in procs):
        raise ClaimFsmError("a writer process failed", code=ErrorCode.INTERNAL)
    total = writers * commits
    return {"writers": writers, "commits": total, "seconds": round(wall, 3),
            "commits_per_s": round(total / wall, 1),
            "synchronous_commit": row[0] if row else "?"}


def climate_fever(data: Path, n: int, tmp: Path) -> tuple[list[BatchClaim], Path]:
    """The first ``n`` dev claims and an index file holding the corpus."""
    from claimfsm.skills.tools.index import EvidenceIndex
    from claimfsm.skills.tools.ingest import ingest_corpus

    index = tmp / "climate-fever-index.db"
    opened = EvidenceIndex.open(index)
    try:
        ingest_corpus(opened, data / "corpus.jsonl", source="wiki")
    finally:
        opened.close()
    claims = []
    with (data / "dev.jsonl").open("rb") as lines:
        for line in lines:
            row = json.loads(line)
            claims.append(BatchClaim(id=row["claim_id"], claim=row["claim"]))
            if len(claims) == n:
                break
    return claims, index


def _claims_case(name: str, claims: Sequence[BatchClaim], db: str, workers: int) -> dict[str, Any]:
    summary = run_batch(claims, db, workers=workers)
    if not summary.ok:
        raise ClaimFsmError(f"{name}: not every claim reached DONE", code=ErrorCode.INTERNAL)
    return {"case": name, "claims": summary.claims, "seconds": summary.seconds,
            "claims_per_s": summary.claims_per_s, "start_up_seconds": summary.start_up_seconds,
            "runner": summary.runner, "workers": summary.workers}


def _cases(pg: str | None, cpus: int) -> tuple[list[tuple[str, int, bool]], list[str]]:
    """The cases to run, and those left out: a case needs as many CPUs as workers (a
    batch refuses more workers than the CPUs Ray reports)."""
    cases = [("serial, SQLite", 0, False), ("Ray 2 workers, SQLite", 2, False)]
    if pg:
        cases += [("Ray 2 workers, PostgreSQL", 2, True), ("Ray 4 workers, PostgreSQL", 4, True)]
    return ([c for c in cases if c[1] <= cpus], [c[0] for c in cases if c[1] > cpus])


def _suite(suite: str, claims: list[BatchClaim], index: Path | None, tmp: Path,
           pg: str | None, repeat: int, cpus: int) -> list[dict[str, Any]]:
    """Serial on SQLite, Ray with 2 workers on SQLite, and on PostgreSQL (2 and 4 workers,
    those Ray has the CPUs for), each ``repeat`` times in alternation on a fresh store;
    each case's best run is its row (``runs`` lists them all), so a burst of load from
    other jobs on a shared machine does not decide a ratio.
    """
    cases, _ = _cases(pg, cpus)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in cases}
    for round_ in range(repeat):
        for name, workers, server in cases:
            if not server:
                path = tmp / f"{suite}-{workers}-{round_}.db"
                if index is not None:  # sessions next to a fresh copy of the corpus index
                    shutil.copyfile(index, path)
                runs[name].append(_claims_case(name, claims, str(path), workers))
                continue
            assert pg is not None
            schema, url = _schema_url(pg)
            if index is not None:
                url += f"&index={index}"
            try:
                runs[name].append(_claims_case(name, claims, url, workers))
            finally:
                _drop_schema(pg, schema)
    rows = []
    for name, _, _ in cases:
        best = max(runs[name], key=lambda r: r["claims_per_s"])
        rows.append({**best, "suite": suite, "runs": [r["claims_per_s"] for r in runs[name]]})
    return rows


def run_bench(*, pg: str | None, claims: int = 1000, data: Path | None = None,
              data_claims: int = 300, repeat: int = 3,
              commits: int = COMMITS_PER_WRITER) -> dict[str, Any]:
    """Run every case and return the report: ``machine``, the ``claims`` rows (one per
    suite and case, with its ``speed_up`` over the suite's serial row), the ``commits``
    rows (PostgreSQL only) and which ``goals`` were met.

    ``claims`` demo claims per case; with ``data`` (a Climate-FEVER folder holding
    ``dev.jsonl``) its first ``data_claims`` claims run too; each case runs ``repeat``
    times and its best run counts; ``commits`` per writer process. Without ``pg`` the
    PostgreSQL rows are left out.
    """
    from claimfsm.batch.cluster import ray_available, ray_cpus

    cpus = ray_cpus() if ray_available() else 0
    rows: list[dict[str, Any]] = []
    commit_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        suites: list[tuple[str, list[BatchClaim], Path | None]] = [
            ("demo", demo_claims(claims), None)]
        if data is not None and (data / "dev.jsonl").is_file():
            suites.append(("climate-fever", *climate_fever(data, data_claims, tmp)))
        for suite, batch, index in suites:
            rows.extend(_suite(suite, batch, index, tmp, pg, repeat, cpus))
    if pg:
        for writers in (1, 8):
            tries = []
            for _ in range(repeat):
                name, url = _schema_url(pg)
                try:
                    tries.append(commit_rate(url, writers, commits))
                finally:
                    _drop_schema(pg, name)
            best = max(tries, key=lambda r: r["commits_per_s"])
            commit_rows.append({**best, "runs": [r["commits_per_s"] for r in tries]})
    for row in rows:
        serial = next(r for r in rows if r["suite"] == row["suite"])["claims_per_s"]
        row["speed_up"] = round(row["claims_per_s"] / serial, 2)
    ray_sqlite = max((r["speed_up"] for r in rows if r["case"] == "Ray 2 workers, SQLite"),
                     default=0.0)
    eight = [c["commits_per_s"] for c in commit_rows if c["writers"] == 8]
    goals = {"ray_2_workers_speed_up_ge_1.7": ray_sqlite >= 1.7,
             "pg_8_writers_ge_2000_commits_per_s": bool(eight) and eight[0] >= 2000}
    return {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "ray_cpus": cpus, "left_out": _cases(pg, cpus)[1]},
            "claims": rows, "commits": commit_rows, "goals": goals}


def format_table(report: dict[str, Any]) -> str:
    """The report of :func:`run_bench` for people: a line per case, then the goals."""
    lines = []
    for row in report["claims"]:
        lines.append(f"{row['suite']:<14} {row['case']:<30} {row['claims_per_s']:>8.1f} "
                     f"claims/s  x{row['speed_up']:<5} ({row['seconds']:.2f} s"
                     f" + {row['start_up_seconds']:.1f} s start-up)")
    for row in report["commits"]:
        lines.append(f"PostgresStore, {row['writers']} writer(s)    "
                     f"{row['commits_per_s']:>8.1f} commits/s "
                     f"(synchronous_commit={row['synchronous_commit']})")
    for name in report["machine"].get("left_out", []):
        lines.append(f"{name}: left out (Ray reports {report['machine']['ray_cpus']} CPUs)")
    lines.append("goals: " + ", ".join(f"{k} {'met' if v else 'MISSED'}"
                                       for k, v in report["goals"].items()))
    return "\n".join(lines)
