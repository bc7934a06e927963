"""A real ``claimfsm ui`` server (:func:`claimfsm.ui.serving.server_config`) against slow
and oversized clients: a client that sends its headers a byte at a time is closed, one
that trickles its body gets 408 and is closed, neither starves a normal client, and a
20 MB chunked body is refused at the limit, not read to its end. Short limits keep it
quick; the 70-connection, 40-second figures are ``make bench-slow-clients``'s."""

from __future__ import annotations

import socket
import time

from tests.support.components import need_module

need_module("uvicorn", "ui")

from claimfsm.ui.bench_slow import run_slow_clients  # noqa: E402
from claimfsm.ui.guard import Limits  # noqa: E402

SHORT = Limits(header_timeout=1.0, body_idle=1.0, body_total=2.5)


def test_slow_clients_are_closed_and_never_starve_a_normal_one() -> None:
    figures = run_slow_clients(slow=20, seconds=8.0, limits=SHORT)
    assert figures["slow_header_open_at_end"] == 0
    assert figures["slow_body_open_at_end"] == 0
    assert figures["slow_body_answered_408"] == 20
    assert figures["normal_requests"] >= 5 and figures["normal_failed"] == 0


def test_a_chunked_body_is_cut_at_the_limit_over_a_real_socket() -> None:
    import threading

    import uvicorn

    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service
    from claimfsm.ui.serving import server_config

    service = Service.open(None)
    server = uvicorn.Server(server_config(create_app(service), "127.0.0.1", 0, SHORT))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    sent = 0
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /api/v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (1 << 16, b"x" * (1 << 16))
            try:
                for _ in range(320):  # 20 MiB in 64 KiB chunks
                    s.sendall(chunk)
                    sent += 1 << 16
            except OSError:
                pass  # the server closed the connection: the point
            s.settimeout(10)
            try:
                while True:
                    data = s.recv(65536)
                    if not data:
                        break
                    answer += data
            except OSError:
                pass
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"INPUT_TOO_LARGE" in answer
    assert sent < 20 << 20  # cut off well before the 20 MB were taken
