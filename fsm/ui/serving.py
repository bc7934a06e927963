"""How ``claimfsm ui`` serves the app: uvicorn with the limits of
:class:`~claimfsm.ui.guard.Limits` (docs/operations.md). uvicorn bounds the header size
(``h11_max_incomplete_event_size``), idle kept-alive connections (``timeout_keep_alive``)
and open connections (``limit_concurrency``: past it a request gets 503), but has no
time limit on the request line and headers: :class:`_Guarded` adds one, so a client that
sends its headers a byte at a time is closed after ``header_timeout`` instead of holding a
connection forever. The body's limits are :class:`~claimfsm.ui.guard.Guard`'s."""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from claimfsm.ui.guard import Limits

__all__ = ["server_config"]


class _Guarded(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's line and headers."""

    header_timeout = Limits().header_timeout
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the headers are in
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._timer = self.loop.call_later(self.header_timeout, self._late)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self) -> None:
        self._timer = None
        # Still no complete request line and headers: nothing to answer, only to close.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, host: str, port: int, limits: Limits | None = None,
                  **options: Any) -> Config:
    """The uvicorn configuration serving ``app`` on ``host:port`` within ``limits``
    (``options`` go to uvicorn as they are: ``log_level``, ``access_log``...)."""
    limits = limits or Limits()
    protocol = type("GuardedH11", (_Guarded,), {"header_timeout": limits.header_timeout})
    options.setdefault("log_level", "warning")
    options.setdefault("access_log", False)
    return Config(app, host=host, port=port, http=protocol,
                  limit_concurrency=limits.max_connections,
                  timeout_keep_alive=max(1, round(limits.keep_alive)),
                  h11_max_incomplete_event_size=limits.max_header_bytes, **options)
