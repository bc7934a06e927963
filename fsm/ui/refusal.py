"""One error answer for the whole HTTP surface: ``{"error": {"code", "msg", "field"?}}``
under ``/api/``, a small HTML page elsewhere, with the status :class:`ErrorCode` gives
the code. The app's exception handlers and the guards in front of it (which answer
before any route runs) both use it, so a refusal looks the same wherever it is made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from claimfsm._base.errors import http_status
from claimfsm.ui.html import e, page

__all__ = ["error_parts"]


def error_parts(path: str, code: str, msg: str, field: Any = None,
                headers: Mapping[str, str] | None = None
                ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Status, raw headers and body of the error answer for a request to ``path``."""
    status = http_status(code)
    if path.startswith("/api/"):
        err: dict[str, Any] = {"code": code, "msg": msg}
        if field:
            err["field"] = str(field)
        body, kind = orjson.dumps({"error": err}), b"application/json"
    else:
        body = page(code, f'<h1>{status}</h1><p class="msg err" id="error"><code>{e(code)}'
                    f'</code>: {e(msg)}</p><p><a href="/">back to the sessions</a></p>'
                    ).encode()
        kind = b"text/html; charset=utf-8"
    raw = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in (headers or {}).items()]
    return status, raw, body
