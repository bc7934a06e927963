"""The evidence index on SQLite and on PostgreSQL, side by side on the same documents:
ingest rate (documents/s, through ``ingest_documents``, batches of 500, one transaction
each) and query latency (median and p99 of ``search(q, lim=5)``, claims as queries) at
100,000 documents; and, with the HTTP search tools, one claim's RETRIEVAL when every
search answers after 100 ms (:mod:`claimfsm.bench.evidence_http`).

``python -m claimfsm.bench.evidence [--docs N] [--queries N] [--data DIR] [--json FILE]``;
PostgreSQL when ``CLAIMFSM_PG_URL`` is set (``make bench-evidence`` starts a throwaway
cluster). The documents: with ``--data`` (the Climate-FEVER folder), each one joins two
corpus sentences (the article of the first as its title), so 5,240 sentences give
100,000 distinct documents of real text; the queries are the dev claims. Without it, the
bundled demo corpus is used the same way. A measurement, never an assertion in a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from claimfsm.engine.runtime import DEMO_DOCS, FIXTURES
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.index_pg import open_index
from claimfsm.skills.tools.ingest import ingest_documents

__all__ = ["DOCS", "QUERIES", "measure_index", "run", "synthesise"]

DOCS = 100_000
QUERIES = 500


def _sentences(data: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    """``(title, sentence)`` pairs and the query claims."""
    if data is not None:
        pairs = [(o["article"], o["text"]) for o in _jsonl(data / "corpus.jsonl")]
        claims = [o["claim"] for o in _jsonl(data / "dev.jsonl")]
        return pairs, claims
    pairs = [(o["title"], o["text"]) for o in _jsonl(DEMO_DOCS)]
    claims = [c["claim"] for c in orjson.loads((FIXTURES / "demo_claims.json").read_bytes())]
    return pairs, claims


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                yield orjson.loads(line)


def synthesise(pairs: list[tuple[str, str]], n: int, path: Path) -> None:
    """Write ``n`` documents to ``path``: document ``i`` is sentence ``i`` joined with the
    sentence a fixed stride away (deterministic, distinct for ``n`` up to len²)."""
    m = len(pairs)
    with path.open("wb") as fh:
        for i in range(n):
            title, first = pairs[i % m]
            second = pairs[(i * 7919 + i // m + 13) % m][1]
            fh.write(orjson.dumps({"id": f"d{i}", "title": title,
                                   "text": f"{first} {second}"}) + b"\n")


def measure_index(index: EvidenceIndex, docs: Path, n: int, queries: list[str]) -> dict[str, Any]:
    """Ingest ``docs`` into ``index``, then time every query."""
    start = time.perf_counter()
    report = ingest_documents(index, docs, source="wiki")
    ingest_s = time.perf_counter() - start
    for q in queries[:10]:  # warm the caches and prepared statements
        index.search(q, lim=5)
    times = []
    hits = 0
    for q in queries:
        t = time.perf_counter()
        hits += len(index.search(q, lim=5))
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"documents": index.count_documents(), "added": report.added,
            "ingest_s": round(ingest_s, 2), "docs_per_s": round(n / ingest_s, 1),
            "queries": len(queries), "hits": hits,
            "query_ms_median": round(statistics.median(times), 2),
            "query_ms_p99": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2)}


def _pg_schema(url: str) -> str:
    import psycopg

    name = "bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{name}"


def run(*, docs: int = DOCS, queries: int = QUERIES, data: Path | None = None,
        pg_url: str | None = None) -> dict[str, Any]:
    """Both indexes (PostgreSQL when ``pg_url``) on the same ``docs`` documents."""
    pairs, claims = _sentences(data)
    qs = [claims[i % len(claims)] for i in range(queries)]
    out: dict[str, Any] = {"docs": docs, "queries": len(qs),
                           "data": "climate-fever" if data is not None else "demo",
                           "python": platform.python_version(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-evidence-") as tmp:
        path = Path(tmp) / "docs.jsonl"
        synthesise(pairs, docs, path)
        openers: list[tuple[str, Callable[[], EvidenceIndex]]] = [
            ("sqlite", lambda: EvidenceIndex.open(Path(tmp) / "index.db"))]
        if pg_url:
            openers.append(("postgresql", lambda: open_index(_pg_schema(pg_url))))
        for name, opener in openers:
            index = opener()
            try:
                out[name] = measure_index(index, path, docs, qs)
            finally:
                index.close()
            print(f"{name:<11} {out[name]}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - the entry point
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.evidence")
    parser.add_argument("--docs", type=int, default=DOCS)
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--http", action="store_true",
                        help="Also time a claim's RETRIEVAL with 100 ms HTTP backends.")
    args = parser.parse_args(argv)
    if args.json is not None and not args.json.parent.is_dir():
        sys.exit(f"error: NOT_FOUND: --json: no folder {args.json.parent}")
    data = args.data if args.data is not None and (args.data / "corpus.jsonl").is_file() else None
    figures = run(docs=args.docs, queries=args.queries, data=data,
                  pg_url=os.environ.get("CLAIMFSM_PG_URL"))
    if args.http:
        from claimfsm.bench.evidence_http import retrieval_with_delay

        figures["http"] = retrieval_with_delay()
    text = orjson.dumps(figures, option=orjson.OPT_INDENT_2)
    if args.json is not None:
        args.json.write_bytes(text)
    else:
        print(text.decode())


if __name__ == "__main__":  # pragma: no cover
    main()
