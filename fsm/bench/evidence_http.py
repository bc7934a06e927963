"""One claim's RETRIEVAL with its searches answered by HTTP backends that take 100 ms.

A MediaWiki-shaped server (``list=search``, ``prop=extracts``) over the bundled demo
corpus runs in this process on 127.0.0.1 and sleeps ``delay_ms`` before every answer;
the sources ``wiki``, ``web`` and ``news`` all point at it. The claim has four
subclaims; RETRIEVAL's steps are timed from entering the state to leaving it. Tool calls
run one after another today, so the time is about the sum of the calls; issue 24's first
item (concurrent calls in a step) is what brings it towards the slowest one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine, seed_demo
from claimfsm.skills.tools.http.config import parse_sources
from claimfsm.skills.tools.index import EvidenceIndex

__all__ = ["CLAIM", "retrieval_with_delay"]

CLAIM = ("NASA landed on the Moon in 1969 and Apollo 13 never reached the Moon and Yuri "
         "Gagarin was the first human in space and Artemis will return astronauts to the Moon.")


@contextmanager
def _server(delay_ms: int) -> Iterator[tuple[str, list[int]]]:
    index = EvidenceIndex.open(":memory:")
    seed_demo(index)
    lock = threading.Lock()  # the index's connection, one reader at a time
    count = [0]

    def _answer(q: dict[str, str]) -> Any:
        if q.get("list") == "search":
            hits = index.search(q.get("srsearch", ""), lim=int(q.get("srlimit", "5")))
            return {"query": {"search": [{"title": h.title, "snippet": h.snippet}
                                         for h in hits]}}
        titles = q.get("titles", "").split("|")
        docs = {d.title: d for d in (index.get_document(h.doc_id) for t in titles
                                     for h in index.search(t, lim=3)) if d}
        return {"query": {"pages": [{"title": t, "extract": docs[t].text} if t in docs
                                    else {"title": t, "missing": True} for t in titles]}}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            time.sleep(delay_ms / 1000)
            q = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
            with lock:
                count[0] += 1
                body = _answer(q)
            raw = orjson.dumps(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    class Server(ThreadingHTTPServer):
        # A step's calls arrive at once: the default backlog of 5 would drop some.
        request_queue_size = 128
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/w/api.php", count
    finally:
        server.shutdown()
        index.close()


def retrieval_with_delay(delay_ms: int = 100, claim: str = CLAIM) -> dict[str, Any]:
    """Seconds ``claim`` spends in RETRIEVAL with every search answering after
    ``delay_ms``, with the number of subclaims, search calls and HTTP requests."""
    with _server(delay_ms) as (url, count):
        sources = parse_sources({name: {"kind": "mediawiki", "url": url, "timeout": 10}
                                 for name in ("wiki", "web", "news")})
        with Engine.open(None, config=EngineConfig(sources=sources)) as eng:
            sid = eng.start(claim).sid
            while eng.store.head(sid).fsm != "RETRIEVAL":
                eng.driver.step(sid)
            before, start = count[0], time.perf_counter()
            calls: list[str] = []
            while eng.store.head(sid).fsm == "RETRIEVAL":
                calls += [c.tool for c in eng.driver.step(sid).calls]
            seconds = time.perf_counter() - start
            head = eng.store.head(sid).state
            subclaims, queries = len(head.subclaims), sum(len(p.get("q", [])) for p in head.plans)
    searches = sum(1 for c in calls if c in ("search", "web_search"))
    return {"delay_ms": delay_ms, "subclaims": subclaims, "planned_queries": queries,
            "search_calls": searches,
            "http_requests": count[0] - before, "retrieval_s": round(seconds, 3),
            "sum_of_delays_s": round((count[0] - before) * delay_ms / 1000, 3),
            "mode": "concurrent"}  # the default profile: a step's ready calls at once
