"""Shared set-up of the UI tests: a demo-seeded store, the app over it, a live server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["app_client", "free_port", "make_service", "serve"]


def make_service(db: Path) -> Any:
    """A :class:`claimfsm.ui.service.Service` over a fresh demo-seeded SQLite file."""
    from claimfsm.ui.service import Service

    return Service.open(str(db))


@contextmanager
def app_client(db: Path) -> Iterator[Any]:
    """The ASGI test client of the app over a fresh demo-seeded SQLite file ``db``."""
    from starlette.testclient import TestClient

    from claimfsm.ui.app import create_app

    service = make_service(db)
    try:
        with TestClient(create_app(service, db_label=db.name)) as client:
            yield client
    finally:
        service.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free loopback port in a thread; yields its URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the UI server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
