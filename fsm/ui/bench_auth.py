"""``make bench-auth``: what API keys cost an ``/api/v1`` call (docs/security.md).

One store (a demo-seeded SQLite file with a finished session) served by two apps that
differ only in their key list: one whose store has no key (auth off, as before keys) and
one with a key (auth on). Interleaved rounds, median of each round's median:

- ``guard_us``: the guard alone, in process, in front of an app that answers at once
  (the real app's routes are matched): auth off, a bearer key, a login cookie;
- ``asgi_us``: the whole app called in process (no socket, no HTTP parsing):
  ``GET /api/v1/sessions/{sid}/head?brief=1`` with auth off, a bearer key, a cookie,
  the modes taking turns every 200 calls;
- ``http_ms``: the same call over real HTTP to uvicorn on loopback (what a client sees);
- ``check_us``: :meth:`Gate.key <claimfsm.ui.auth.Gate.key>` alone (split, look up,
  HMAC-SHA-256, constant-time compare, expiry).

``python -m claimfsm.ui.bench_auth [--json FILE]``.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claimfsm._base.json import figures_main
from claimfsm.state.keys import new_key
from claimfsm.state.memory import MemoryStore

__all__ = ["run"]

ROUNDS = 7
ASGI_CALLS = 2000
HTTP_CALLS = 200
CHUNK = 200


async def _asgi_us(app: Any, path: str, headers: list[tuple[bytes, bytes]], n: int) -> float:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"brief=1", "root_path": "",
             # The Host the server is bound to: the host guard serves only that.
             "headers": [(b"host", b"127.0.0.1"), *headers],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80)}
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(dict(scope), receive, send)  # warm
    start = time.perf_counter()
    for _ in range(n):
        await app(dict(scope), receive, send)
    took = (time.perf_counter() - start) / n * 1e6
    if set(statuses) != {200}:
        raise RuntimeError(f"{path}: answered {sorted(set(statuses))}, not 200")
    return took


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _serve(app: Any) -> tuple[Any, threading.Thread, str]:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def _http_ms(url: str, headers: dict[str, str], n: int) -> float:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    target = f"{parts.path}?{parts.query}"
    times = []
    try:
        for i in range(n + 1):  # one keep-alive connection; the first call warms it
            start = time.perf_counter()
            conn.request("GET", target, headers=headers)
            answer = conn.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"{target}: answered {answer.status}")
            if i:
                times.append((time.perf_counter() - start) * 1000)
    finally:
        conn.close()
    return statistics.median(times)


def run(rounds: int = ROUNDS, calls: int = ASGI_CALLS,
        http_calls: int = HTTP_CALLS) -> dict[str, Any]:
    """The figures: medians over ``rounds`` interleaved rounds of ``calls`` in-process
    calls (five times that for the guard alone) and ``http_calls`` HTTP calls per mode;
    every call must answer 200."""
    from claimfsm.ui.app import create_app
    from claimfsm.ui.auth import Gate
    from claimfsm.ui.authz import COOKIE
    from claimfsm.ui.service import Service

    text, row = new_key("bench", "read", now=datetime.now(UTC))
    keyed = MemoryStore()
    keyed.add_key(row)
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-auth-") as tmp:
        service = Service.open(str(Path(tmp) / "auth.db"))
        sid = service.run(service.start("NASA landed on the Moon in 1969.").sid).sid
        gate_on = Gate(keyed)
        gate_on.reload()
        cookie, _ = gate_on.login(row)
        apps = {"off": create_app(service, gate=Gate(MemoryStore())),
                "on": create_app(service, gate=gate_on)}
        path = f"/api/v1/sessions/{sid}/head"
        modes = {"off": ("off", {}), "bearer": ("on", {"authorization": f"Bearer {text}"}),
                 "cookie": ("on", {"cookie": f"{COOKIE}={cookie}"})}
        servers = {name: _serve(app) for name, app in apps.items()}
        from claimfsm.ui.authz import AuthGuard

        guards = {name: AuthGuard(_nothing, gate=gate, routes=apps["on"].router.routes)
                  for name, gate in (("off", Gate(MemoryStore())), ("on", gate_on))}
        guard: dict[str, list[float]] = {m: [] for m in modes}
        asgi: dict[str, list[float]] = {m: [] for m in modes}
        http: dict[str, list[float]] = {m: [] for m in modes}
        checks: list[float] = []
        try:
            raw = {mode: [(k.encode(), v.encode()) for k, v in headers.items()]
                   for mode, (_app, headers) in modes.items()}
            chunks = max(1, calls // CHUNK)
            for _ in range(rounds):
                # The modes take turns every CHUNK calls: a slow spell of a loaded machine
                # falls on all of them, not on whichever ran then.
                parts: dict[str, list[float]] = {m: [] for m in modes}
                for _ in range(chunks):
                    for mode, (app_name, _headers) in modes.items():
                        parts[mode].append(asyncio.run(
                            _asgi_us(apps[app_name], path, raw[mode], calls // chunks)))
                for mode, (app_name, headers) in modes.items():
                    guard[mode].append(asyncio.run(
                        _asgi_us(guards[app_name], path, raw[mode], calls * 5)))
                    asgi[mode].append(statistics.median(parts[mode]))
                    http[mode].append(_http_ms(f"{servers[app_name][2]}{path}?brief=1",
                                               headers, http_calls))
                start = time.perf_counter()
                for _ in range(calls):
                    if gate_on.key(text) is None:
                        raise RuntimeError("the bench key did not check")
                checks.append((time.perf_counter() - start) / calls * 1e6)
        finally:
            for server, thread, _url in servers.values():
                server.should_exit = True
                thread.join(10)
            service.close()
    out: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load": round(os.getloadavg()[0], 1), "rounds": rounds}
    out["guard_us"] = {m: round(statistics.median(v), 1) for m, v in guard.items()}
    out["asgi_us"] = {m: round(statistics.median(v), 1) for m, v in asgi.items()}
    out["http_ms"] = {m: round(statistics.median(v), 3) for m, v in http.items()}
    out["check_us"] = round(statistics.median(checks), 2)
    return out


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    figures_main(run)
