"""A search backend for the tests: a real HTTP server on 127.0.0.1 (run as a subprocess).

Serves a JSONL corpus (default: the bundled demo corpus) in three answer shapes:

- ``GET /w/api.php`` the MediaWiki Action API: ``list=search`` and ``prop=extracts``;
- ``POST /docs/_search`` Elasticsearch/OpenSearch: ``multi_match`` and ``ids`` queries;
- ``GET /json/search?q=&n=`` and ``GET /json/doc/ID``: a JSON API of its own shape
  (``{"results": [{"key", "name", "body", "relevance"}]}``).

Delay and faults are chosen by a path prefix, so one server serves every case:
``/delay/MS/...`` answers after MS milliseconds, ``/jitter/MS/...`` after a random
0..MS milliseconds (concurrent requests finish in a random order); ``/fault/KIND/...``
answers with ``html`` (an HTML error page with status 200), ``text`` (plain non-JSON), ``huge``
(8 MiB of JSON), ``malformed`` (JSON of another shape), ``500``, ``429``, ``hang``
(never answers within a test's timeout), ``drop`` (closes the connection);
``/hangon/WORD/...`` holds a request whose URL or body holds WORD until ``GET /release``.
``GET /seen`` gives the headers of the last search request and the request count;
``GET /requests`` every request so far (path and body), ``done`` or still ``waiting``.

Run: ``python tests/support/search_server.py [--corpus FILE] [--delay MS]``; prints
``PORT n`` on its first line. :func:`start` runs it for a test session.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

_WORD = re.compile(r"\w+")
_DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "demo_docs.jsonl"


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2]


class Corpus:
    def __init__(self, path: Path) -> None:
        self.docs: list[dict[str, str]] = []
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    title = obj.get("title") or obj.get("article") or obj["id"]
                    self.docs.append({"id": obj["id"], "title": title, "text": obj["text"]})
        self.by_id = {d["id"]: d for d in self.docs}
        self.by_title = {d["title"]: d for d in self.docs}

    def search(self, q: str, n: int) -> list[tuple[dict[str, str], float]]:
        want = set(_terms(q))
        scored = []
        for d in self.docs:
            have = _terms(d["title"] + " " + d["text"])
            score = sum(1 for w in have if w in want) + 2 * len(want & set(_terms(d["title"])))
            if score:
                scored.append((d, float(score)))
        scored.sort(key=lambda x: (-x[1], x[0]["id"]))
        return scored[:n]


class Handler(BaseHTTPRequestHandler):
    corpus: Corpus
    delay_ms = 0
    seen: ClassVar[dict[str, Any]] = {"headers": {}, "count": 0}
    requests: ClassVar[list[dict[str, Any]]] = []
    released = threading.Event()
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, obj: Any) -> None:
        self._send(200, json.dumps(obj).encode())

    def do_GET(self) -> None:
        self._route(None)

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self._route(json.loads(self.rfile.read(size) or b"null"))

    def _route(self, body: Any) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        if path == "/seen":
            with self.lock:
                return self._json(self.seen)
        if path == "/requests":
            with self.lock:
                return self._json(self.requests)
        if path == "/release":
            self.released.set()
            return self._json({})
        entry = {"path": self.path, "body": body, "state": "waiting"}
        with self.lock:
            type(self).seen = {"headers": dict(self.headers), "count": self.seen["count"] + 1}
            self.requests.append(entry)
        try:
            self._answer(path, parts.query, body)
        finally:
            with self.lock:
                entry["state"] = "done"

    def _answer(self, path: str, raw_query: str, body: Any) -> None:
        m = re.match(r"^/hangon/(\w+)(/.*)$", path)
        if m:
            word, path = m.group(1).lower(), m.group(2)
            if word in (unquote(path + "?" + raw_query) + json.dumps(body)).lower():
                self.released.wait(120)
        delay = self.delay_ms
        m = re.match(r"^/delay/(\d+)(/.*)$", path)
        if m:
            delay, path = int(m.group(1)), m.group(2)
        m = re.match(r"^/jitter/(\d+)(/.*)$", path)
        if m:
            delay, path = random.randint(0, int(m.group(1))), m.group(2)
        if delay:
            time.sleep(delay / 1000)
        m = re.match(r"^/fault/(\w+)(/.*)$", path)
        if m:
            return self._fault(m.group(1))
        query = {k: v[-1] for k, v in parse_qs(raw_query).items()}
        if path == "/w/api.php":
            return self._mediawiki(query)
        if path.endswith("/_search"):
            return self._opensearch(body or {})
        if path == "/json/search":
            hits = self.corpus.search(query.get("q", ""), int(query.get("n", "5")))
            return self._json({"results": [{"key": d["id"], "name": d["title"],
                                            "body": d["text"], "relevance": s}
                                           for d, s in hits]})
        if path.startswith("/json/doc/"):
            d = self.corpus.by_id.get(unquote(path[len("/json/doc/"):]))
            if d is None:
                return self._send(404, b'{"error": "not found"}')
            return self._json({"key": d["id"], "name": d["title"], "body": d["text"]})
        return self._send(404, b'{"error": "no such path"}')

    def _fault(self, kind: str) -> None:
        if kind == "html":
            return self._send(200, b"<!DOCTYPE html><html><body>Gateway error</body></html>",
                              "text/html; charset=utf-8")
        if kind == "text":
            return self._send(200, b"upstream said no", "text/plain")
        if kind == "huge":
            return self._send(200, b'{"pad": "' + b"x" * (8 << 20) + b'"}')
        if kind == "malformed":
            return self._json({"unexpected": [1, 2, 3]})
        if kind in ("500", "429"):
            return self._send(int(kind), b'{"error": "fault"}')
        if kind == "hang":
            time.sleep(30)
            return self._json({})
        if kind == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        return self._send(400, b'{"error": "unknown fault"}')

    def _mediawiki(self, q: dict[str, str]) -> None:
        if q.get("list") == "search":
            hits = self.corpus.search(q.get("srsearch", ""), int(q.get("srlimit", "10")))
            return self._json({"batchcomplete": True, "query": {"search": [
                {"ns": 0, "title": d["title"], "pageid": i,
                 "snippet": d["text"][:80].replace(" ", ' <span class="searchmatch">', 1)
                 + "</span>"} for i, (d, _) in enumerate(hits)]}})
        if q.get("prop") == "extracts":
            pages = []
            for title in q.get("titles", "").split("|"):
                d = self.corpus.by_title.get(title)
                pages.append({"title": title, "missing": True} if d is None
                             else {"title": title, "extract": d["text"]})
            return self._json({"batchcomplete": True, "query": {"pages": pages}})
        return self._send(400, b'{"error": {"code": "badparams"}}')

    def _opensearch(self, body: dict[str, Any]) -> None:
        query = body.get("query", {})
        if "ids" in query:
            docs = [self.corpus.by_id[i] for i in query["ids"]["values"] if i in self.corpus.by_id]
            hits = [(d, 1.0) for d in docs]
        else:
            hits = self.corpus.search(query["multi_match"]["query"], int(body.get("size", 10)))
        return self._json({"took": 1, "hits": {"total": {"value": len(hits)}, "hits": [
            {"_index": "docs", "_id": d["id"], "_score": s,
             "_source": {"title": d["title"], "text": d["text"]}} for d, s in hits]}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=_DEMO)
    parser.add_argument("--delay", type=int, default=0)
    args = parser.parse_args()
    Handler.corpus = Corpus(args.corpus)
    Handler.delay_ms = args.delay
    ThreadingHTTPServer.request_queue_size = 128  # calls at once: the default of 5 drops some
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


@dataclass
class Served:
    """A running server: its base URL and its process."""

    url: str
    proc: subprocess.Popen[str]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def start(*, corpus: Path | None = None, delay_ms: int = 0) -> Served:
    """Start the server as a subprocess; its URL once it listens."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--delay", str(delay_ms)]
    if corpus is not None:
        cmd += ["--corpus", str(corpus)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"search server did not start: {line!r}")
    return Served(url=f"http://127.0.0.1:{int(line.split()[1])}", proc=proc)


if __name__ == "__main__":
    main()
