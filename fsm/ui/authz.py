"""The ASGI middleware that asks for a key (docs/security.md). While the store has no API
key every request passes, as before keys existed. Once it has one, every request but the
login form needs ``Authorization: Bearer KEY`` or the login cookie, and a role at least
the route's (:mod:`claimfsm.ui.roles`); a request that changes something with the cookie
also carries the login's CSRF token (``X-CSRF-Token``, or a form's first field
``csrf``). Failed keys count against the client address (:class:`~claimfsm.ui.auth.Throttle`).

The request's key name becomes its actor (``request.state.actor``); the pages learn the
viewer from :data:`claimfsm.ui.viewer.VIEWER`.
"""

from __future__ import annotations

import hmac
import re
from collections import deque
from urllib.parse import quote

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from claimfsm._base.codes import ErrorCode, http_status
from claimfsm.state.keys import role_rank
from claimfsm.ui.auth import Gate, Login
from claimfsm.ui.html import e, page
from claimfsm.ui.roles import PUBLIC, ROUTE_ROLES
from claimfsm.ui.viewer import VIEWER, Viewer

__all__ = ["COOKIE", "AuthGuard", "refusal"]

COOKIE = "claimfsm_session"
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_PREFIX_MAX = 8192
_FIELD_URLENCODED = re.compile(rb"^csrf=([A-Za-z0-9_-]{1,100})(?:&|$)")


def refusal(path: str, code: str, msg: str, *,
            headers: dict[str, str] | None = None) -> tuple[int, list[tuple[bytes, bytes]],
                                                            bytes]:
    """Status, headers and body of an error answer: JSON under ``/api/`` (and for
    ``/metrics``, read by programs), an HTML page elsewhere."""
    status = http_status(code)
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if path.startswith("/api/") or path == "/metrics":
        body = orjson.dumps({"error": {"code": code, "msg": msg}})
        return status, [(b"content-type", b"application/json"), *extra], body
    login = '<p><a href="/login">log in</a></p>' if status in (401, 403) else ""
    html = page(code, f'<h1>{status}</h1><p class="msg err" id="error"><code>{e(code)}'
                f"</code>: {e(msg)}</p>{login}")
    return status, [(b"content-type", b"text/html; charset=utf-8"), *extra], html.encode()


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]],
                  body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _first_field(prefix: bytes, content_type: str) -> str | None:
    # The CSRF field comes first in the pages' forms, and browsers send fields in
    # document order: reading a few KB is enough, the rest of the body streams on.
    kind = content_type.lower()
    if kind.startswith("application/x-www-form-urlencoded"):
        found = _FIELD_URLENCODED.match(prefix)
        return found.group(1).decode() if found else None
    if kind.startswith("multipart/form-data"):
        boundary = re.search(r'boundary="?([^";]{1,200})"?', content_type)
        if boundary is None:
            return None
        part = re.match(rb"^--" + re.escape(boundary.group(1).encode())
                        + rb'\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n'
                        rb"([A-Za-z0-9_-]{1,100})\r\n--", prefix, re.IGNORECASE)
        return part.group(1).decode() if part else None
    return None


class AuthGuard:
    """Wraps the app (inside :class:`claimfsm.ui.guard.Guard`'s host, origin and body
    checks); ``routes`` is the app's route list (read on each request, so a
    route added later, ``/metrics``, is checked too)."""

    def __init__(self, app: ASGIApp, *, gate: Gate, routes: list[BaseRoute]) -> None:
        self.app = app
        self.gate = gate
        self.routes = routes
        self._table: list[tuple[re.Pattern[str], dict[str, str]]] = []
        self._indexed = -1

    def role_of(self, scope: Scope) -> str:
        """The role the request's route needs: a route not in :data:`ROUTE_ROLES` needs
        more than any key has; no route at all (a 404 or 405 to come) needs read."""
        if len(self.routes) != self._indexed:
            self._index()
        method = "GET" if scope["method"] == "HEAD" else scope["method"]
        path = scope["path"]
        for regex, roles in self._table:
            if regex.match(path):
                return roles.get(method, "read")  # another method: the 405 to come
        return "read"

    def _index(self) -> None:
        # Path regexes in route order, each with its methods' roles: one regex match per
        # route until the path's, as the router itself does (routes are only appended).
        table: dict[str, tuple[re.Pattern[str], dict[str, str]]] = {}
        for route in self.routes:
            path = getattr(route, "path", "")
            regex = getattr(route, "path_regex", None)
            if regex is None:
                continue
            _, roles = table.setdefault(path, (regex, {}))
            for method in getattr(route, "methods", None) or ():
                roles[method] = ROUTE_ROLES.get((method, path), "unlisted")
        self._table = list(table.values())
        self._indexed = len(self.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gate = self.gate
        if gate.stale():
            await run_in_threadpool(gate.reload)
        if not gate.required:
            await self.app(scope, receive, send)
            return
        role = self.role_of(scope)
        if role == PUBLIC:
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        headers = Headers(scope=scope)
        who = await self._identify(scope, headers, send)
        if who is None:
            return
        name, has, login = who
        if role == "unlisted" or role_rank(has) < role_rank(role):
            need = "a role no key has" if role == "unlisted" else f"the {role} role"
            await _answer(send, *refusal(
                path, ErrorCode.FORBIDDEN,
                f"role: {method} {path} needs {need}; key {name} has the {has} role"))
            return
        if login is not None and method not in _SAFE:
            token = headers.get("x-csrf-token")
            if token is None:
                token, receive = await self._form_token(headers, receive)
            # As bytes: compare_digest refuses a str that is not ASCII (a hostile header).
            if token is None or not hmac.compare_digest(token.encode(), login.csrf.encode()):
                await _answer(send, *refusal(
                    path, ErrorCode.CSRF_FAILED,
                    "csrf: the form or request lacks this login's token; reload the page"))
                return
        scope.setdefault("state", {})["actor"] = name
        reset = VIEWER.set(Viewer(name, has, None if login is None else login.csrf))
        try:
            await self.app(scope, receive, send)
        finally:
            VIEWER.reset(reset)

    async def _identify(self, scope: Scope, headers: Headers,
                        send: Send) -> tuple[str, str, Login | None] | None:
        """The key's name and role and the login (``None`` for a bearer key), or ``None``
        once a refusal is sent."""
        path, gate = scope["path"], self.gate
        address = (scope.get("client") or ("unknown", 0))[0]
        bearer = headers.get("authorization")
        if bearer is not None:
            wait = gate.throttle.wait(address)
            if wait:
                await _answer(send, *refusal(
                    path, ErrorCode.TOO_MANY_ATTEMPTS,
                    f"Authorization: too many bad keys from {address}; wait {wait} s",
                    headers={"Retry-After": str(wait)}))
                return None
            scheme, _, text = bearer.partition(" ")
            key = gate.key(text.strip()) if scheme.lower() == "bearer" else None
            if key is None:
                gate.throttle.failed(address)
                await _answer(send, *refusal(
                    path, ErrorCode.AUTH_REQUIRED, "Authorization: the key is wrong, revoked or "
                    "expired (send Authorization: Bearer KEY)",
                    headers={"WWW-Authenticate": 'Bearer realm="claimfsm"'}))
                return None
            return key.name, key.role, None
        token = cookie_parser(headers.get("cookie", "")).get(COOKIE)
        login = gate.logged_in(token) if token else None
        if login is not None:
            return login.name, login.role, login
        if scope["method"] in _SAFE and not path.startswith("/api/") and path != "/metrics":
            target = path + ("?" + scope["query_string"].decode("latin-1")
                             if scope.get("query_string") else "")
            await _answer(send, 303, [(b"location", b"/login?next="
                                       + quote(target, safe="").encode())], b"")
            return None
        await _answer(send, *refusal(
            path, ErrorCode.AUTH_REQUIRED, "Authorization: this server needs an API key: "
            "send Authorization: Bearer KEY, or log in at /login",
            headers={"WWW-Authenticate": 'Bearer realm="claimfsm"'}))
        return None

    @staticmethod
    async def _form_token(headers: Headers, receive: Receive) -> tuple[str | None, Receive]:
        """The first form field ``csrf`` of the body, and a ``receive`` that hands the
        app the whole body again."""
        kept: deque[Message] = deque()
        size = 0
        while size < _PREFIX_MAX:
            message = await receive()
            kept.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        prefix = b"".join(m.get("body", b"") for m in kept if m["type"] == "http.request")
        token = _first_field(prefix[:_PREFIX_MAX], headers.get("content-type", ""))

        async def replay() -> Message:
            return kept.popleft() if kept else await receive()

        return token, replay
