"""The login form and logout (docs/security.md): ``GET /login`` shows the form,
``POST /login`` checks the key and sets the login cookie (HttpOnly, SameSite=Strict,
Secure when the request came over https or a proxy says so with
``X-Forwarded-Proto: https``), ``POST /logout`` ends the login. Failed logins count
against the client address like bad bearer keys (429 with ``Retry-After``)."""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from claimfsm.ui.auth import LOGIN_TTL, Gate
from claimfsm.ui.authz import COOKIE
from claimfsm.ui.html import e, page

__all__ = ["login_routes"]

_MAX_FORM = 4096


def _next_of(value: str | None) -> str:
    # Only a path of this server: never an open redirect to another site.
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return "/"
    return value


def _form(next_path: str, error: str = "") -> str:
    msg = f'<p class="msg err" id="login-error">{e(error)}</p>' if error else ""
    return page("Log in", (
        "<h1>Log in</h1>"
        '<form class="card" method="post" action="/login" id="login-form">'
        f'<input type="hidden" name="next" value="{e(next_path)}">'
        '<label>API key <input type="password" name="key" size="60" autocomplete="off" '
        'autofocus required></label> <button class="primary" type="submit">Log in</button>'
        f"</form>{msg}<p class=\"muted\">Ask an admin for a key: <code>claimfsm keys add "
        "NAME --role read</code>.</p>"), nav=False)


def _secure(request: Request) -> bool:
    proto = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or proto == "https"


def login_routes(gate: Gate) -> list[Route]:
    """``GET``/``POST /login`` and ``POST /logout`` over ``gate``."""

    async def form(request: Request) -> Response:
        return HTMLResponse(_form(_next_of(request.query_params.get("next"))))

    async def login(request: Request) -> Response:
        address = request.client.host if request.client else "unknown"
        wait = gate.throttle.wait(address)
        if wait:
            return HTMLResponse(_form("/", f"TOO_MANY_ATTEMPTS: too many failed logins from "
                                      f"{address}; wait {wait} s"), status_code=429,
                                headers={"Retry-After": str(wait)})
        body = b""
        async for chunk in request.stream():  # read no more than a login form can be
            body += chunk
            if len(body) > _MAX_FORM:
                return HTMLResponse(_form("/", "INPUT_TOO_LARGE: the form is over "
                                          f"{_MAX_FORM} bytes"), status_code=413)
        try:
            fields = parse_qs(body.decode("latin-1"), max_num_fields=4)
        except ValueError:
            return HTMLResponse(_form("/", "BAD_INPUT: the form has more fields than key "
                                      "and next"), status_code=422)
        text = (fields.get("key") or [""])[0].strip()
        next_path = _next_of((fields.get("next") or [""])[0])
        key = gate.key(text)
        if key is None:
            gate.throttle.failed(address)
            return HTMLResponse(_form(next_path, "AUTH_REQUIRED: the key is wrong, revoked "
                                      "or expired"), status_code=401)
        token, _ = gate.login(key)
        answer = RedirectResponse(next_path, status_code=303)
        answer.set_cookie(COOKIE, token, max_age=LOGIN_TTL, path="/", httponly=True,
                          samesite="strict", secure=_secure(request))
        return answer

    async def logout(request: Request) -> Response:
        token = request.cookies.get(COOKIE)
        if token:
            gate.logout(token)
        answer = RedirectResponse("/login", status_code=303)
        answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict",
                             secure=_secure(request))
        return answer

    return [Route("/login", form, methods=["GET"]), Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"])]
