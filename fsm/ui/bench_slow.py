"""``claimfsm bench slow-clients`` (``make bench-slow-clients``): slow clients against a
real ``claimfsm ui`` server (:func:`~claimfsm.ui.serving.server_config`). ``slow``
connections send their headers a byte a second, as many more send a declared body a byte
a second; meanwhile a normal client reads ``/api/v1/machine`` every half second. After
``seconds`` it counts the slow connections still open and reports the normal client's
answers and latencies (docs/operations.md)."""

from __future__ import annotations

import http.client
import socket
import statistics
import threading
import time
from typing import Any

from claimfsm.ui.guard import Limits

__all__ = ["run_slow_clients"]


def _slow_sockets(port: int, n: int, kind: str) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if kind == "header":
            s.sendall(b"GET /api/v1/machine HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        else:
            s.sendall(b"POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        s.setblocking(False)
        out.append(s)
    return out


def _trickle(socks: dict[str, list[socket.socket]], closed: dict[int, float],
             answers: dict[int, bytes], stop: threading.Event, began: float) -> None:
    # One byte a second on every connection; a connection the server closed is noted
    # with when, and what it answered before closing (a 408 for a stalled body).
    while not stop.is_set():
        for kind, group in socks.items():
            for s in group:
                if s.fileno() in closed:
                    continue
                try:
                    data = s.recv(65536)
                    if data:
                        answers[s.fileno()] = answers.get(s.fileno(), b"") + data
                    else:
                        closed[s.fileno()] = time.monotonic() - began
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    closed[s.fileno()] = time.monotonic() - began
                    continue
                try:
                    s.send(b"X-Slow: 1\r\n" if kind == "header" else b" ")
                except OSError:
                    closed[s.fileno()] = time.monotonic() - began
        stop.wait(1.0)


def run_slow_clients(slow: int = 70, seconds: float = 40.0,
                     limits: Limits | None = None) -> dict[str, Any]:
    """Serve a throwaway memory store within ``limits``, hold ``slow`` slow-header and
    ``slow`` slow-body connections for ``seconds`` while a normal client keeps asking;
    the figures (milliseconds under ``*_ms``, seconds under ``*_s``)."""
    import uvicorn

    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service
    from claimfsm.ui.serving import server_config

    limits = limits or Limits()
    service = Service.open(None)
    app = create_app(service, limits=limits)
    server = uvicorn.Server(server_config(app, "127.0.0.1", 0, limits))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    began = time.monotonic()
    socks = {"header": _slow_sockets(port, slow, "header"),
             "body": _slow_sockets(port, slow, "body")}
    closed: dict[int, float] = {}
    answers: dict[int, bytes] = {}
    stop = threading.Event()
    trickler = threading.Thread(target=_trickle, args=(socks, closed, answers, stop, began),
                                daemon=True)
    trickler.start()
    times, failed = [], 0
    while time.monotonic() - began < seconds:
        t0 = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/v1/machine")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        times.append((time.perf_counter() - t0) * 1000)
        failed += not ok
        time.sleep(0.5)
    stop.set()
    trickler.join(5)

    def still_open(kind: str) -> int:
        return sum(1 for s in socks[kind] if s.fileno() not in closed)

    body_408 = sum(1 for s in socks["body"] if answers.get(s.fileno(), b"")
                   .startswith(b"HTTP/1.1 408"))
    figures = {
        "slow_header_connections": slow, "slow_body_connections": slow,
        "seconds": seconds, "header_timeout_s": limits.header_timeout,
        "body_idle_s": limits.body_idle,
        "slow_header_open_at_end": still_open("header"),
        "slow_body_open_at_end": still_open("body"), "slow_body_answered_408": body_408,
        "slowest_close_s": round(max(closed.values(), default=0.0), 1),
        "normal_requests": len(times), "normal_failed": failed,
        "normal_median_ms": round(statistics.median(times), 1),
        "normal_max_ms": round(max(times), 1),
    }
    for group in socks.values():
        for s in group:
            s.close()
    server.should_exit = True
    thread.join(10)
    service.close()
    return figures
