"""The ASGI application: the inspector's pages and the ``/api/v1`` API over one
:class:`~claimfsm.ui.service.Service`, with the engine's error codes as HTTP statuses."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Match, Route

from claimfsm._base.errors import http_status
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.version import session_version
from claimfsm.state.model import Revision
from claimfsm.ui.access import RequestLog
from claimfsm.ui.api import api_routes, query_int, query_of, read_upload
from claimfsm.ui.auth import Gate
from claimfsm.ui.authz import AuthGuard
from claimfsm.ui.compare import compare_routes
from claimfsm.ui.guard import Guard, Limits
from claimfsm.ui.keys_api import keys_routes
from claimfsm.ui.login import login_routes
from claimfsm.ui.openapi import openapi
from claimfsm.ui.pages import (
    document_page,
    page_start,
    panels,
    replay_page,
    session_page,
    sessions_page,
)
from claimfsm.ui.people_api import people_routes
from claimfsm.ui.refusal import error_parts
from claimfsm.ui.replaying import replay_bytes
from claimfsm.ui.review_routes import review_routes
from claimfsm.ui.service import Service

__all__ = ["create_app", "status_of"]


def status_of(code: str) -> int:
    """The HTTP status for an error code: ``ErrorCode``'s table (every profile error, a
    bad option or config file, a model or extra that cannot load, is the request's: 422;
    a code the table gives none is a 500)."""
    return http_status(code)


def _error_response(request: Request, code: str, msg: str, field: Any = None,
                    headers: dict[str, str] | None = None) -> Response:
    status, raw, body = error_parts(request.url.path, code, msg, field, headers)
    response = Response(body, status_code=status)
    response.raw_headers = raw
    return response


def _allowed(app: Starlette, request: Request) -> str:
    # The methods the path's routes take, for a 405's Allow header.
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    return ", ".join(sorted(methods))


def create_app(service: Service, *, db_label: str = "", allowed_hosts: Iterable[str] = (),
               limits: Limits | None = None, gate: Gate | None = None) -> Starlette:
    """The web app over ``service`` (``db_label`` is shown on the sessions page).

    Requests are served for the address each connection came in on and for
    ``allowed_hosts``; ``limits`` bound bodies and their reading
    (:mod:`claimfsm.ui.guard`). With the event log on, every request is logged
    (:mod:`claimfsm.ui.access`). Once the store has an API key, every request needs one
    (``gate``: the default reads the service's store; docs/security.md)."""

    async def on_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, ClaimFsmError):
            return _error_response(request, exc.code, exc.msg, exc.field)
        # Never a traceback on the wire: the code says it is a bug, the type says where.
        return _error_response(request, "INTERNAL", f"{type(exc).__name__}: {exc}")

    handlers: dict[Any, Any] = {ClaimFsmError: on_error, Exception: on_error}

    async def home(request: Request) -> Response:
        query = query_of(request)
        version = request.query_params.get("version") or None
        result, versions = await run_in_threadpool(lambda: service.versioned(query, version))
        parents = await run_in_threadpool(
            lambda: service.parents([item.sid for item in result.items]))
        names = service.engine.driver.definition.names
        return HTMLResponse(sessions_page(result, query, names, db_label, versions, version,
                                          parents))

    def shown(request: Request) -> tuple[Revision, list[Revision]]:
        # The head and one page of revisions read by key: the page's cost, never the
        # whole history's (?before=N: the page ending just before revision N).
        sid = str(request.path_params["sid"])
        before = query_int(request, "before")
        head = service.head(sid)
        start = page_start(head.rev, before)
        end = head.rev + 1 if before is None else before
        page = service.history_page(sid, start, end - start)
        return head, list(page.items)

    def shown_with_version(request: Request
                           ) -> tuple[Revision, list[Revision], str, dict[str, Any]]:
        head, revs = shown(request)
        return head, revs, session_version(service.engine.store, head), service.lineage(head)

    async def session(request: Request) -> Response:
        head, revs, version, lineage = await run_in_threadpool(
            lambda: shown_with_version(request))
        return HTMLResponse(session_page(service.engine.driver.definition, head, revs,
                                         version, lineage))

    async def session_panels(request: Request) -> Response:
        head, revs = await run_in_threadpool(lambda: shown(request))
        return HTMLResponse(panels(service.engine.driver.definition, head, revs))

    async def document(request: Request) -> Response:
        doc_id = str(request.path_params["doc_id"])
        doc = await run_in_threadpool(lambda: service.document(doc_id))
        if doc is None:
            return _error_response(request, "NOT_FOUND", f"doc_id: no document {doc_id!r}")
        return HTMLResponse(document_page(doc))

    async def replay_form(request: Request) -> Response:
        return HTMLResponse(replay_page(service.record_names()))

    async def replay_run(request: Request) -> Response:
        names = service.record_names()
        try:
            data, fields = await read_upload(request)
            if data is None:
                name = fields.get("name") or ""
                if not name:
                    return HTMLResponse(replay_page(names, error={
                        "code": "BAD_INPUT", "msg": "file: pick a record or upload one"}),
                        status_code=422)
                data, source = service.record_bytes(name)
            else:
                source = fields.get("source", "upload")
            mode = fields.get("mode") or "strict"
            payload = data
            result = await run_in_threadpool(lambda: replay_bytes(payload, source, mode))
        except ClaimFsmError as exc:
            return HTMLResponse(replay_page(names, error=exc.to_dict()),
                                status_code=status_of(exc.code))
        return HTMLResponse(replay_page(names, result))

    async def spec(request: Request) -> Response:
        return JSONResponse(openapi(service.engine.driver.definition,
                                    service.record_names()))

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/sessions/{sid}", session, methods=["GET"]),
        Route("/sessions/{sid}/panels", session_panels, methods=["GET"]),
        Route("/documents/{doc_id}", document, methods=["GET"]),
        Route("/replay", replay_form, methods=["GET"]),
        Route("/replay", replay_run, methods=["POST"]),
        Route("/api/v1/openapi.json", spec, methods=["GET"]),
        *api_routes(service),
        *people_routes(service),
        *review_routes(service),
        *compare_routes(service),
    ]
    gate = gate or Gate(service.engine.store)
    routes += [*login_routes(gate), *keys_routes(gate)]
    middleware = [Middleware(RequestLog),
                  Middleware(Guard, hosts=tuple(allowed_hosts), limits=limits or Limits())]
    app = Starlette(routes=routes, exception_handlers=handlers, middleware=middleware)
    # Innermost, after the host and origin checks, so the request log sees the key's
    # name; given the router's own list, so routes added later (/metrics) are guarded.
    app.user_middleware.append(Middleware(AuthGuard, gate=gate, routes=app.router.routes))

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if status == 405:
            allow = _allowed(app, request)
            return _error_response(request, "METHOD_NOT_ALLOWED",
                                   f"{request.method} is not allowed on {request.url.path}; "
                                   f"it takes {allow}", headers={"allow": allow})
        return _error_response(request, "NOT_FOUND", f"no route {request.url.path}")

    app.add_exception_handler(404, not_found)
    app.add_exception_handler(405, not_found)
    return app
