"""A fault-injecting HTTP proxy in front of a model server.

Each request takes the next fault of ``faults`` (then ``"pass"`` once they run out):

- ``pass``: forwarded to the upstream server, its answer returned as it is;
- ``429``: ``429 Too Many Requests`` with ``Retry-After: <retry_after>``;
- ``500``: ``500 Internal Server Error``;
- ``stall``: the request is read and nothing is ever answered (the socket stays open);
- ``cut``: a ``Content-Length`` of 1000 and 20 bytes, then the connection closes;
- ``html``: ``200`` with an HTML login page;
- ``huge``: ``200`` with a 10 MB JSON body;
- ``schema``: the upstream's answer with its message replaced by JSON that breaks any
  skill's schema (``{"unexpected": true}``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.request
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

__all__ = ["FaultProxy"]

HUGE = 10 * 1024 * 1024


class FaultProxy:
    """A proxy on 127.0.0.1 that injects ``faults`` in order, then passes requests on."""

    def __init__(self, upstream: str, faults: Iterable[str] = (), *,
                 retry_after: str = "1") -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = list(faults)
        self.retry_after = retry_after
        self.seen: list[str] = []
        self._stalled: list[socket.socket] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner._lock:
                    # A request in the json_schema form goes to the upstream as it is
                    # (llama-cpp-python refuses that form and the client asks again as
                    # json_object): the faults are for the requests it answers.
                    legacy = b'"json_schema"' in body
                    fault = "pass" if legacy or not owner.faults else owner.faults.pop(0)
                    if not legacy:
                        owner.seen.append(fault)
                owner._serve(self, fault, body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL clients use instead of the upstream's."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _forward(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        base = self.upstream.removesuffix("/v1")
        req = urllib.request.Request(base + path, data=body, method="POST", headers={
            k: v for k, v in headers.items() if k.lower() in ("content-type", "authorization")})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def _serve(self, h: BaseHTTPRequestHandler, fault: str, body: bytes) -> None:
        def send(status: int, payload: bytes, ctype: str = "application/json",
                 extra: dict[str, str] | None = None, length: int | None = None) -> None:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(payload) if length is None else length))
            for k, v in (extra or {}).items():
                h.send_header(k, v)
            h.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                h.wfile.write(payload)
                h.wfile.flush()

        if fault == "stall":
            with self._lock:
                self._stalled.append(h.connection)  # kept open, never answered
            threading.Event().wait(300)
            return
        if fault == "429":
            send(429, b'{"error": "rate limited"}', extra={"Retry-After": self.retry_after})
        elif fault == "500":
            send(500, b'{"error": "boom"}')
        elif fault == "cut":
            send(200, b'{"choices": [{"mess', length=1000)
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif fault == "html":
            send(200, b"<!doctype html><html><body><h1>Sign in</h1></body></html>",
                 ctype="text/html")
        elif fault == "huge":
            send(200, b'{"pad": "' + b"x" * HUGE + b'"}')
        else:
            status, answer = self._forward(h.path, body, dict(h.headers))
            if fault == "schema" and status == 200:
                data = orjson.loads(answer)
                data["choices"][0]["message"]["content"] = '{"unexpected": true}'
                answer = orjson.dumps(data)
            send(status, answer)

    def start(self) -> FaultProxy:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, closing stalled connections too."""
        for sock in self._stalled:
            with contextlib.suppress(OSError):
                sock.close()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
