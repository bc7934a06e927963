"""The guards in front of every route (docs/operations.md), one ASGI middleware:

- the ``Host`` header must name the address the connection came in on or a configured
  host (``--allowed-host``): a page on a rebinding domain never reaches a loopback server;
- a state-changing request (any method but GET, HEAD, OPTIONS), and any request of the API
  or ``/metrics``, sent by a page of another origin (``Origin`` not this host, or
  ``Sec-Fetch-Site`` cross-site or same-site) is refused; following a link to a page is not;
- a body is counted while it is read (chunked too) and refused as soon as it passes the
  limit, and must arrive in time: a pause between two parts or the whole body over the
  limits of :class:`Limits` answers ``REQUEST_TIMEOUT``.

Body refusals are raised from ``receive`` as ``ClaimFsmError`` so the route's own error
handling answers them (a JSON error under ``/api/``, the page's error elsewhere)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.engine.errors import InputTooLarge
from claimfsm.ui.media import MULTIPART, media_type
from claimfsm.ui.refusal import error_parts

__all__ = ["Guard", "Limits", "RequestTimeout", "host_name"]

Scope = dict[str, Any]
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME = frozenset({"same-origin", "none"})


@dataclass(frozen=True)
class Limits:
    """What a request may cost: body sizes in bytes, waits in seconds, open connections."""

    max_body: int = 1 << 20  # a JSON body (and any body of a route that takes no upload)
    max_upload: int = (32 << 20) + (64 << 10)  # a multipart record upload and its framing
    body_idle: float = 10.0  # the longest pause between two parts of a body
    body_total: float = 30.0  # the whole body, however steadily it trickles in
    header_timeout: float = 10.0  # request line and headers (the server's protocol)
    keep_alive: float = 5.0  # an idle kept-alive connection
    max_connections: int = 256  # open connections before new requests get 503
    max_header_bytes: int = 64 << 10  # request line and headers together


class RequestTimeout(ClaimFsmError):
    """A request body that did not arrive within :class:`Limits`' waits."""

    code = ErrorCode.REQUEST_TIMEOUT


def host_name(value: str) -> str:
    """The host part of a ``Host`` header or an origin's netloc, lower-cased, without the
    port and IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The middleware: ``hosts`` are the configured host names, served besides the
    address each connection was accepted on."""

    def __init__(self, app: Any, *, hosts: Iterable[str] = (), limits: Limits | None = None):
        self.app = app
        self.hosts = frozenset(host_name(h) for h in hosts if h)
        self.limits = limits or Limits()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _answer(send, scope["path"], *refusal)
            return
        kind, _ = media_type(headers.get("content-type"))
        limit = self.limits.max_upload if kind == MULTIPART else self.limits.max_body
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _answer(send, scope["path"], ErrorCode.INPUT_TOO_LARGE if length.isdigit()
                          else ErrorCode.BAD_INPUT, f"content-length: {length[:40]!r}, the limit "
                          f"is {limit} bytes", "content-length")
            return
        counted = _Counted(receive, limit, self.limits)
        # No length and no chunking: HTTP/1.1 says there is no body to wait for.
        counted.done = length in (None, "0") and "transfer-encoding" not in headers

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not counted.done:
                # Answered before the body was read to its end (a refusal, a timeout):
                # the rest is never read, so the connection cannot carry another request.
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"connection", b"close")]}
            await send(message)

        # A client gone mid-body has nobody left to answer: not an error to log.
        with contextlib.suppress(ClientDisconnect):
            await self.app(scope, counted, sending)

    def _refusal(self, scope: Scope, headers: dict[str, str]
                 ) -> tuple[str, str, str] | None:
        host = headers.get("host", "")
        served = self.hosts | {host_name(str((scope.get("server") or ("",))[0]))}
        if host_name(host) not in served or not host:
            return (ErrorCode.HOST_NOT_ALLOWED, f"host: {host[:100]!r} is not a name this server "
                    "answers to (claimfsm ui --allowed-host NAME adds one)", "host")
        if scope["method"] in _SAFE and not _guarded_read(scope, headers):
            return None
        site = headers.get("sec-fetch-site")
        if site is not None and site not in _SAME:
            return (ErrorCode.CROSS_ORIGIN, f"sec-fetch-site: {site[:40]!r}: a page of "
                    "another site may not send this request", "sec-fetch-site")
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
            return (ErrorCode.CROSS_ORIGIN, f"origin: {origin[:100]!r} is not this server's "
                    "origin", "origin")
        return None


def _guarded_read(scope: Scope, headers: dict[str, str]) -> bool:
    # A link followed from another site to a page is fine; the API and the metrics are
    # for scripts and this server's own pages, and are read with no navigation.
    path = str(scope["path"])
    api = path.startswith("/api/") or path == "/metrics"
    return api or headers.get("sec-fetch-mode", "navigate") != "navigate"


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope["headers"]:
        # A repeated Host, Origin or length is ambiguous: the first one counts, always.
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out


async def _answer(send: Any, path: str, code: str, msg: str, field: str) -> None:
    # The body, if any, is never read: the connection closes after the answer.
    status, raw, body = error_parts(path, code, msg, field, {"connection": "close"})
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class _Counted:
    """``receive`` with the body counted against ``limit`` and timed."""

    def __init__(self, receive: Any, limit: int, limits: Limits):
        self.receive, self.limit, self.limits = receive, limit, limits
        self.seen, self.done = 0, False
        self.deadline = time.monotonic() + limits.body_total

    async def __call__(self) -> dict[str, Any]:
        if self.done:
            # No body is owed (none declared, or it is all in): a streamed answer waits
            # here for the disconnect, which may take any time. Still counted: an ASGI
            # server may pass a body without declaring it.
            message = dict(await self.receive())
        else:
            wait = min(self.limits.body_idle, self.deadline - time.monotonic())
            try:
                message = dict(await asyncio.wait_for(self.receive(), max(wait, 0.0)))
            except TimeoutError:
                raise RequestTimeout(f"body: no data for {wait:.0f} s (at most "
                                     f"{self.limits.body_idle:.0f} s between parts and "
                                     f"{self.limits.body_total:.0f} s in all)",
                                     field="body") from None
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            self.done = self.done or not message.get("more_body", False)
            if self.seen > self.limit:
                raise InputTooLarge(f"body: over {self.limit} bytes", field="body",
                                    limit=self.limit)
        else:
            self.done = True
        return message
