"""The HTTP client of the search backends: stdlib ``http.client``, bounded, cached.

Every way a backend can fail is a :class:`HttpFailure` with a stable code, which the
tools turn into a failed tool result (never a traceback): no answer in ``timeout``
seconds (``HTTP_TIMEOUT``), no connection (``HTTP_UNREACHABLE``), an error status
(``HTTP_STATUS``; 429 is ``RATE_LIMITED``, so the executor's fallback runs), HTML or other
non-JSON text (``HTTP_NOT_JSON``), more than ``max_bytes`` (``HTTP_TOO_LARGE``, read no
further). Answers are cached by the digest of the request (method, URL, body; never the
headers, which carry the credential), so a query asked twice in a process costs one call.
"""

from __future__ import annotations

import hashlib
import http.client
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import orjson

from claimfsm._base.errors import ErrorCode
from claimfsm.skills.tools.core import ToolError

__all__ = ["CACHE_SIZE", "HttpClient", "HttpFailure", "request_digest"]

CACHE_SIZE = 512
_CHUNK = 65_536


class HttpFailure(ToolError):
    """A backend call that failed; ``code`` says how."""


def request_digest(method: str, url: str, body: bytes | None) -> str:
    """The cache key of a request: sha256 over method, URL and body."""
    h = hashlib.sha256(method.encode() + b"\0" + url.encode() + b"\0" + (body or b""))
    return h.hexdigest()


class HttpClient:
    """JSON over HTTP for one backend: ``timeout`` seconds per call, at most ``max_bytes``
    read, ``headers`` sent with every request (kept here only)."""

    def __init__(self, *, timeout: float, max_bytes: int,
                 headers: dict[str, str] | None = None, name: str = "") -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.name = name or "backend"
        self._headers = {"Accept": "application/json", "User-Agent": "claimfsm",
                         **(headers or {})}
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0  # calls that reached the network (the cache's misses)

    def get(self, url: str) -> Any:
        """The JSON answer of ``GET url``."""
        return self._cached("GET", url, None)

    def post(self, url: str, payload: Any) -> Any:
        """The JSON answer of ``POST url`` with ``payload`` as the JSON body."""
        return self._cached("POST", url, orjson.dumps(payload, option=orjson.OPT_SORT_KEYS))

    def _cached(self, method: str, url: str, body: bytes | None) -> Any:
        key = request_digest(method, url, body)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = self._send(method, url, body)
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return value

    def _fail(self, code: ErrorCode, problem: str) -> HttpFailure:
        return HttpFailure(f"{self.name}: {problem}", code=code)

    def _send(self, method: str, url: str, body: bytes | None) -> Any:
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            import ssl  # only for https backends: plain ones never pay for it

            conn = http.client.HTTPSConnection(parts.netloc, timeout=self.timeout,
                                               context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=self.timeout)
        headers = dict(self._headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        self.requests += 1
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            raw = self._read(resp)
            status, ctype = resp.status, resp.getheader("Content-Type") or ""
        except TimeoutError:
            raise self._fail(ErrorCode.HTTP_TIMEOUT,
                             f"no answer within {self.timeout:g} s") from None
        except (ConnectionError, OSError, http.client.HTTPException) as exc:
            raise self._fail(ErrorCode.HTTP_UNREACHABLE,
                             f"{type(exc).__name__}: {exc}"[:300]) from None
        finally:
            conn.close()
        return self._decode(status, ctype, raw)

    def _read(self, resp: http.client.HTTPResponse) -> bytes:
        # Read in chunks and stop one byte past the limit: a huge answer costs max_bytes.
        out = bytearray()
        while len(out) <= self.max_bytes:
            chunk = resp.read(min(_CHUNK, self.max_bytes + 1 - len(out)))
            if not chunk:
                return bytes(out)
            out += chunk
        raise self._fail(ErrorCode.HTTP_TOO_LARGE,
                         f"answer over max_bytes ({self.max_bytes} bytes)")

    def _decode(self, status: int, ctype: str, raw: bytes) -> Any:
        if status == 429:
            raise self._fail(ErrorCode.RATE_LIMITED, "HTTP 429 Too Many Requests")
        if not 200 <= status < 300:
            raise self._fail(ErrorCode.HTTP_STATUS, f"HTTP {status}")
        head = raw.lstrip()[:1]
        if "html" in ctype.lower() or head == b"<":
            raise self._fail(ErrorCode.HTTP_NOT_JSON, "answered with an HTML page, not JSON")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise self._fail(ErrorCode.HTTP_NOT_JSON,
                             f"answer is not JSON ({ctype or 'no content type'})") from None
