"""The request log of ``claimfsm ui --log-format json|text``: one ``request`` event per
answered request with method, path, status, duration (ms) and actor, the outermost
middleware so a request the guards refuse is logged too.

The actor is what the layer that knows it puts in the request's state
(``request.state.actor``, i.e. ``scope["state"]["actor"]``); ``-`` when none does. The
query string, headers and body are never logged (a key or a claim's text may be in them)."""

from __future__ import annotations

import logging
import time
from typing import Any

from claimfsm.observe.logs import LOGGER, log_event

__all__ = ["RequestLog"]


class RequestLog:
    """The middleware; nearly free while the event log is off."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not LOGGER.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500  # what the client sees when the app raises before answering

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            actor = (scope.get("state") or {}).get("actor") or "-"
            log_event("request", logging.INFO if status < 500 else logging.WARNING,
                      method=scope["method"], path=_path(scope), status=status,
                      ms=round((time.perf_counter() - began) * 1000, 2), actor=str(actor))


def _path(scope: dict[str, Any]) -> str:
    # The path as sent, still percent-encoded: a decoded one could carry a line break
    # into a text log.
    raw = scope.get("raw_path")
    text = raw.decode("latin-1") if isinstance(raw, bytes) else str(scope["path"])
    return text[:1000].encode("unicode_escape").decode("ascii")
