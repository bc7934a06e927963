"""One HTTP exchange with an OpenAI-compatible server, bounded in time and size.

The standard library's ``http.client`` (claimfsm's core depends on no HTTP package): a
POST of a JSON body, the answer read in chunks under one overall time limit (a server
that stalls mid-body is cut off when the limit passes, not at every chunk's timeout) and
a size limit (a 10 MB answer is refused after the limit's bytes, not buffered). Every
failure is a :class:`HttpFailure` with a stable code; nothing here raises anything else.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from claimfsm._base.errors import ErrorCode
from claimfsm._base.record import Record
from claimfsm.skills.tools.core import ToolError

if TYPE_CHECKING:
    import http.client

__all__ = ["MAX_RESPONSE_BYTES", "HttpAnswer", "HttpFailure", "post_json", "retry_after"]

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""The largest answer body read; a model's JSON answer is a few kilobytes."""

_CHUNK = 64 * 1024


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class HttpAnswer(Record, frozen=True):
    """A complete answer: status, the headers that matter, the body."""

    status: int
    content_type: str
    retry_after: str | None
    body: bytes

    def __init__(self, status: int, content_type: str, retry_after: str | None,
                 body: bytes) -> None:
        self._fill(status=status, content_type=content_type, retry_after=retry_after,
                   body=body)


class HttpFailure(ToolError):
    """The exchange failed: ``code`` is a stable ErrorCode name, ``msg`` says why."""

    code = ErrorCode.MODEL_UNREACHABLE

    def __init__(self, msg: str, *, code: str) -> None:
        super().__init__(msg, code=code)


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    # Every engine registers model.chat, few sessions call it: http.client (with ssl and
    # email) loads on the first call, not in each command's start-up.
    import http.client

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpFailure(f"model_url: {url!r} is not an http(s) URL", code="BAD_ARGS")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=max(0.001, timeout))
    return conn, parts.path or "/"


def post_json(
    url: str, body: bytes, *, headers: Mapping[str, str], timeout: float,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> HttpAnswer:
    """POST ``body`` to ``url``; the whole exchange ends within ``timeout`` seconds."""
    if timeout <= 0:
        raise HttpFailure("no time left for the call", code="MODEL_TIMEOUT")
    import http.client

    ends = time.monotonic() + timeout
    conn, path = _connection(url, timeout)
    try:
        conn.request("POST", path, body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json", **headers})
        resp = conn.getresponse()
        length = resp.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > max_bytes:
            raise HttpFailure(f"answer of {length} bytes, the limit is {max_bytes}",
                              code="MODEL_RESPONSE_TOO_LARGE")
        chunks: list[bytes] = []
        size = 0
        while True:
            left = ends - time.monotonic()
            if left <= 0:
                raise HttpFailure(f"no complete answer within {timeout:.1f} s",
                                  code="MODEL_TIMEOUT")
            if conn.sock is not None:
                conn.sock.settimeout(left)
            chunk = resp.read1(_CHUNK) if hasattr(resp, "read1") else resp.read(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise HttpFailure(f"answer over the limit of {max_bytes} bytes",
                                  code="MODEL_RESPONSE_TOO_LARGE")
            chunks.append(chunk)
        return HttpAnswer(status=resp.status,
                          content_type=resp.getheader("Content-Type") or "",
                          retry_after=resp.getheader("Retry-After"), body=b"".join(chunks))
    except HttpFailure:
        raise
    except TimeoutError:
        raise HttpFailure(f"no complete answer within {timeout:.1f} s",
                          code="MODEL_TIMEOUT") from None
    except http.client.IncompleteRead as exc:
        raise HttpFailure(f"the answer was cut after {len(exc.partial)} bytes",
                          code="MODEL_BAD_RESPONSE") from None
    except (ConnectionError, http.client.HTTPException, OSError) as exc:
        # The URL may carry credentials: the message names the failure, never the URL.
        raise HttpFailure(f"model server: {type(exc).__name__}: {exc}",
                          code="MODEL_UNREACHABLE") from None
    finally:
        conn.close()


def retry_after(value: str | None, *, default: float) -> float:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds; an HTTP date or a
    malformed value falls back to ``default``)."""
    if value is None:
        return default
    try:
        seconds = float(value.strip())
    except ValueError:
        return default
    return seconds if seconds >= 0 else default
