"""Tool calls at the same time, measured (``make bench-concurrent``,
``python -m claimfsm.batch.bench_http``): every search answers after 100 ms.

- **RETRIEVAL of one claim** of 4 subclaims x 4 planned queries (:data:`CLAIM_4X4`), from
  entering the state to leaving it, three ways: the default (up to 32 ready plan steps a
  step, 16 calls at once), one call at a time (``max_concurrent_tools = 1``) and one
  call a step (``batch = 1``, how sessions ran before calls were gathered).
- **``batch`` on 2 Ray workers**: claims/s of the demo claims with the default and with
  ``max_concurrent_tools = 1``. Each claim's session is started first with that setting
  in its config (as ``batch`` resumes a session from its head, with its own config).

The backend is a MediaWiki-shaped server in this process on 127.0.0.1 over the bundled
demo corpus, sleeping ``delay_ms`` before each answer; the sources ``wiki``, ``web`` and
``news`` all point at it, so every search and every page read of EXTRACT waits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from claimfsm.batch.claims import BatchClaim
from claimfsm.batch.runner import run_batch
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import FIXTURES, Engine, seed_demo
from claimfsm.engine.sources import SourceSet
from claimfsm.skills.tools.http.config import SourceConfig, parse_sources
from claimfsm.skills.tools.index import EvidenceIndex

__all__ = ["CLAIM_4X4", "MODES", "batch_with_delay", "delayed_sources", "retrieval_with_delay"]

CLAIM_4X4 = (
    "Neil Armstrong and Buzz Aldrin landed the Apollo 11 lunar module Eagle on the Moon in "
    "July 1969 near the Sea of Tranquility after the Saturn V launch from Florida and Yuri "
    "Gagarin flew the Vostok 1 spacecraft around the Earth in April 1961 from the Baikonur "
    "Cosmodrome in Kazakhstan for the Soviet Union air force with a parachute landing near "
    "Saratov and Jim Lovell, Jack Swigert and Fred Haise of Apollo 13 never reached the lunar "
    "surface after an oxygen tank exploded in April 1970 during the mission to Fra Mauro "
    "highlands and NASA Artemis astronauts will return humans to the Moon south pole with "
    "the Space Launch System rocket, the Orion capsule, the lunar Gateway station and the "
    "Starship lander in December 2026")
"""Splits into 4 subclaims with 4 planned queries each (the planner's maximum)."""

MODES: Mapping[str, dict[str, Any]] = {
    "concurrent": {},
    "one at a time": {"max_concurrent_tools": 1},
    "one call a step": {"batch": 1},
}
"""Session config of each way of running RETRIEVAL's calls (over the profile's)."""


@contextmanager
def delayed_sources(delay_ms: int) -> Iterator[tuple[dict[str, SourceConfig], list[int]]]:
    """``wiki``, ``web`` and ``news`` answered by a server that waits ``delay_ms`` before
    each answer, and its count of answers."""
    index = EvidenceIndex.open(":memory:")
    seed_demo(index)
    lock = threading.Lock()  # the index's connection, one reader at a time
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            time.sleep(delay_ms / 1000)
            q = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            with lock:
                count[0] += 1
                body = _answer(index, q)
            raw = orjson.dumps(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    class Server(ThreadingHTTPServer):
        # The default backlog of 5 drops the connections of 32 calls at once, and a
        # dropped SYN is sent again a second later: a stall of the server, not the engine.
        request_queue_size = 128
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/w/api.php"
    try:
        yield parse_sources({name: {"kind": "mediawiki", "url": url, "timeout": 30}
                             for name in ("wiki", "web", "news")}), count
    finally:
        server.shutdown()
        index.close()


def _answer(index: EvidenceIndex, q: Mapping[str, str]) -> Any:
    if q.get("list") == "search":
        hits = index.search(q.get("srsearch", ""), lim=int(q.get("srlimit", "5")))
        return {"query": {"search": [{"title": h.title, "snippet": h.snippet} for h in hits]}}
    titles = q.get("titles", "").split("|")
    docs = {d.title: d for d in (index.get_document(h.doc_id) for t in titles
                                 for h in index.search(t, lim=3)) if d}
    return {"query": {"pages": [{"title": t, "extract": docs[t].text} if t in docs
                                else {"title": t, "missing": True} for t in titles]}}


def _retrieval(sources: dict[str, SourceConfig], count: list[int], claim: str,
               config: dict[str, Any]) -> dict[str, Any]:
    with Engine.open(None, config=EngineConfig(sources=sources)) as eng:
        sid = eng.start(claim, config=config).sid
        while eng.store.head(sid).fsm != "RETRIEVAL":
            eng.driver.step(sid)
        before, start = count[0], time.perf_counter()
        calls = steps = 0
        while eng.store.head(sid).fsm == "RETRIEVAL":
            calls += len(eng.driver.step(sid).calls)
            steps += 1
        seconds = time.perf_counter() - start
        state = eng.store.head(sid).state
    return {"s": seconds, "steps": steps, "tool_calls": calls,
            "http_requests": count[0] - before, "subclaims": len(state.subclaims),
            "planned_queries": [len(p.get("q", [])) for p in state.plans]}


def retrieval_with_delay(delay_ms: int = 100, claim: str = CLAIM_4X4,
                         reps: int = 5) -> list[dict[str, Any]]:
    """Seconds ``claim`` spends in RETRIEVAL in each of :data:`MODES` (``reps`` runs
    each, after one unmeasured run that warms imports, threads and the server)."""
    out: list[dict[str, Any]] = []
    with delayed_sources(delay_ms) as (sources, count):
        _retrieval(sources, count, claim, {})
        for mode, config in MODES.items():
            runs = [_retrieval(sources, count, claim, config) for _ in range(reps)]
            times = sorted(r["s"] for r in runs)
            last = runs[-1]
            out.append({"mode": mode, "config": config, "runs": reps,
                        "retrieval_s": {"min": round(times[0], 3),
                                        "median": round(times[len(times) // 2], 3),
                                        "max": round(times[-1], 3)},
                        "sum_of_delays_s": round(last["http_requests"] * delay_ms / 1000, 3),
                        **{k: v for k, v in last.items() if k != "s"}})
    return out


def batch_with_delay(delay_ms: int = 100, claims: int = 16, workers: int = 2,
                     folder: Path | None = None,
                     modes: tuple[str, ...] = ("concurrent", "one at a time", "concurrent"),
                     claim: str | None = None) -> list[dict[str, Any]]:
    """claims/s of ``batch`` on ``workers`` Ray workers with and without concurrent calls
    (``modes`` in turn: the first run of a process also pays for warming its caches), on
    the demo claims or ``claim`` every time (each line a session of its own)."""
    demo = [claim] if claim is not None else [
        c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
    items = [BatchClaim(id=f"c{i}", claim=demo[i % len(demo)]) for i in range(claims)]
    out: list[dict[str, Any]] = []
    with delayed_sources(delay_ms) as (sources, count), \
            tempfile.TemporaryDirectory(dir=folder) as tmp:
        for n, mode in enumerate(modes):
            db = str(Path(tmp) / f"{n}.db")
            with Engine.open(db, config=EngineConfig(sources=sources)) as eng:
                for item in items:  # each session keeps the setting in its own config
                    eng.driver.start(item.claim, sid=item.sid,
                                     config={**eng.profile.config(), **MODES[mode]})
            before = count[0]
            summary = run_batch(items, db, workers=workers, sources=SourceSet.of(sources))
            out.append({"mode": mode, "config": MODES[mode], "claims": claims,
                        "workers": summary.workers, "ok": summary.ok,
                        "seconds": summary.seconds, "claims_per_s": summary.claims_per_s,
                        "http_requests": count[0] - before})
    return out


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - the entry point
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.batch.bench_http")
    parser.add_argument("--delay-ms", type=int, default=100)
    parser.add_argument("--claims", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--batch-claim", choices=("demo", "4x4"), default="demo",
                        help="batch the demo claims, or the 4 x 4 claim every time (the "
                        "same searches: a worker's HTTP cache answers from its second claim)")
    parser.add_argument("--no-batch", action="store_true", help="RETRIEVAL only (no Ray).")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_before": os.getloadavg()},
        "retrieval": retrieval_with_delay(args.delay_ms, reps=args.reps),
    }
    if not args.no_batch:
        claim = CLAIM_4X4 if args.batch_claim == "4x4" else None
        figures["batch"] = batch_with_delay(args.delay_ms, args.claims, args.workers,
                                            claim=claim)
    figures["machine"]["load_after"] = os.getloadavg()
    text = orjson.dumps(figures, option=orjson.OPT_INDENT_2)
    if args.json is not None:
        args.json.write_bytes(text)
    print(text.decode())


if __name__ == "__main__":  # pragma: no cover
    main()
