"""The JSON HTTP API, ``/api/v1/...``: the CLI's session operations with the CLI's JSON
shapes (``step`` as ``claimfsm step --json``, ``run`` as ``verify --json``, revisions as
``show --json``). Errors are ``{"error": {"code", "msg", "field"?}}`` with the engine's
codes; :mod:`claimfsm.ui.app` maps each code to its HTTP status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from claimfsm.engine.errors import BadInput, ClaimFsmError, ErrorCode, InputTooLarge
from claimfsm.engine.views import revision_json, step_json, verdict_json
from claimfsm.state.catalog import SummaryQuery, summary_of
from claimfsm.ui.media import JSON_TYPE, MULTIPART, media_type
from claimfsm.ui.models import (
    ForkRequest,
    ReplayRequest,
    RollbackRequest,
    RunRequest,
    StartRequest,
    StepRequest,
)
from claimfsm.ui.queries import (
    MAX_INT,
    DiffQuery,
    HeadQuery,
    HistoryQuery,
    RevisionPath,
    SessionsQuery,
    bad_input,
    query_model,
    whole,
)
from claimfsm.ui.replaying import replay_bytes
from claimfsm.ui.report import render_report
from claimfsm.ui.service import Service
from claimfsm.ui.viewer import actor_of, key_name

__all__ = [
    "API_ACTOR", "MAX_BODY", "MAX_RECORD", "api_routes", "bad_input", "query_int", "read_json",
    "read_upload", "session_url",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

MAX_BODY = 1 << 20  # a JSON request body
MAX_RECORD = 32 << 20  # an uploaded record file
API_ACTOR = "api"  # the actor of a deletion through the API on a store without keys


class JSON(JSONResponse):
    """orjson, keys in insertion order (as the CLI prints)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class NotFound(ClaimFsmError):
    """A thing the API was asked for does not exist (not a session: those are the store's)."""

    code = ErrorCode.NOT_FOUND


class UnsupportedMedia(ClaimFsmError):
    """A request body that is not declared as JSON."""

    code = ErrorCode.UNSUPPORTED_MEDIA_TYPE


async def _body(request: Request, model: type[M]) -> M:
    # Only a JSON content type: a page on another site cannot send one without the
    # browser asking first (CORS), so it cannot drive sessions through a form post.
    header = request.headers.get("content-type", "")
    kind, params = media_type(header)
    if not header and request.headers.get("content-length", "0") == "0" \
            and "transfer-encoding" not in request.headers:
        kind = JSON_TYPE  # no body at all (curl -X POST): the model's defaults, as {}
    if kind != JSON_TYPE or params.get("charset", "utf-8").lower() not in ("utf-8", "utf8"):
        raise UnsupportedMedia(f"content-type: {header[:100] or 'none'!r}; send "
                               "application/json (UTF-8)", field="content-type")
    data = await request.body()
    if len(data) > MAX_BODY:
        raise InputTooLarge(f"body: {len(data)} bytes, the limit is {MAX_BODY}", field="body",
                            limit=MAX_BODY)
    try:
        raw = orjson.loads(data) if data.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"body: not JSON ({exc})", field="body") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise bad_input(exc) from None


read_json = _body  # the request body as ``model``: JSON only, bounded, 422 naming the field


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(whole(raw))
    except ValueError:
        raise BadInput(f"{name}: {raw[:40]!r} is not a whole number", field=name) from None
    if not 0 <= value <= MAX_INT:
        raise BadInput(f"{name}: {value} is out of range (0 to {MAX_INT})", field=name)
    return value


def query_int(request: Request, name: str, default: int | None = None) -> int | None:
    """The query parameter ``name`` as a whole number from 0 to :data:`MAX_INT`
    (``default`` when absent); anything else is a BAD_INPUT naming it."""
    return _int(request, name, default)


def query_of(request: Request) -> SummaryQuery:
    """The sessions listing's query from ``q``, ``fsm``, ``verdict``, ``status``, ``limit``,
    ``before`` (:class:`~claimfsm.ui.queries.SessionsQuery`'s bounds and values)."""
    query = query_model(request, SessionsQuery)
    return SummaryQuery(**query.model_dump(exclude={"version"}))


async def read_upload(request: Request) -> tuple[bytes | None, dict[str, str]]:
    """A multipart form's ``file`` (``None`` when empty) and its other fields; a body that
    is not a multipart form is ``BAD_INPUT``."""
    try:
        async with request.form(max_part_size=MAX_RECORD) as form:
            fields = {k: v for k, v in form.items() if isinstance(v, str)}
            upload = form.get("file")
            data = None
            if upload is not None and not isinstance(upload, str) and upload.filename:
                data = await upload.read(MAX_RECORD + 1)
                fields["source"] = upload.filename
    except HTTPException as exc:  # Starlette's word for a form it cannot parse
        raise BadInput(f"file: not a multipart form ({exc.detail})", field="file") from None
    if data is not None and len(data) > MAX_RECORD:
        raise InputTooLarge(f"file: over {MAX_RECORD} bytes", field="file", limit=MAX_RECORD)
    return data, fields


def session_url(sid: str) -> str:
    """The API path of session ``sid`` (a 201's ``Location``)."""
    return f"/api/v1/sessions/{quote(sid, safe='')}"


def api_routes(service: Service) -> list[Route]:
    """Every ``/api/v1`` route, bound to ``service``."""

    async def call(fn: Callable[[], T]) -> T:
        return await run_in_threadpool(fn)

    def sid_of(request: Request) -> str:
        return str(request.path_params["sid"])

    async def list_sessions(request: Request) -> Response:
        query = query_of(request)
        version = request.query_params.get("version") or None
        page, versions = await call(lambda: service.versioned(query, version))
        parents = await call(lambda: service.parents([i.sid for i in page.items]))
        out = page.to_json()
        for item in out["items"]:
            item["version"] = versions[item["sid"]]
            item["forked_from"] = parents[item["sid"]]
        return JSON(out)

    async def create(request: Request) -> Response:
        body = await _body(request, StartRequest)
        opts = body.model_dump(exclude={"claim"})
        head = await service.astart(body.claim, opts, actor=key_name(request.scope))
        return JSON(revision_json(head, full=False), status_code=201,
                    headers={"location": session_url(head.sid)})

    async def session(request: Request) -> Response:
        sid = sid_of(request)
        head = await service.ahead(sid)
        lineage = await call(lambda: service.lineage(head))
        return JSON({"summary": summary_of(0, head).model_dump(exclude={"seq"}),
                     "verdict": verdict_json(head), "head": revision_json(head, full=False),
                     **lineage})

    async def delete(request: Request) -> Response:
        # The tombstone names the key (admin role); on a store without keys, "api".
        sid = sid_of(request)
        who = actor_of(request.scope, API_ACTOR)
        stone = await call(lambda: service.delete(sid, actor=who))
        return JSON(stone.model_dump(mode="json"))

    async def head(request: Request) -> Response:
        sid = sid_of(request)
        brief = query_model(request, HeadQuery).brief
        rev = await service.ahead(sid)
        if brief:
            return JSON({"sid": rev.sid, "rev": rev.rev, "fsm": rev.fsm, "ts": rev.ts})
        return JSON(revision_json(rev))

    async def history(request: Request) -> Response:
        sid = sid_of(request)
        q = query_model(request, HistoryQuery)
        offset, limit = q.offset, q.limit
        page = await call(lambda: service.history_page(sid, offset, limit))
        return JSON({"items": [revision_json(r, full=False) for r in page.items],
                     "total": page.total, "next_offset": page.next})

    async def revision(request: Request) -> Response:
        sid, rev = sid_of(request), query_model(request, RevisionPath, path=True).rev
        return JSON(revision_json(await service.arevision(sid, rev)))

    async def diff(request: Request) -> Response:
        sid, q = sid_of(request), query_model(request, DiffQuery)
        a, b = q.a, q.b
        changes = await call(lambda: service.diff(sid, a, b))
        return JSON({"sid": sid, "a": a, "b": b, "changes": changes})

    async def step(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, StepRequest)
        return JSON(step_json(await service.astep(sid, body.expected_rev,
                                                  actor=key_name(request.scope))))

    async def run(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, RunRequest)
        done = await service.arun(sid, body.expected_rev, body.max_steps,
                                  actor=key_name(request.scope))
        return JSON(verdict_json(done))

    async def rollback(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, RollbackRequest)
        rev = await service.arollback(sid, body.to, reopen=body.reopen,
                                      expected_rev=body.expected_rev,
                                      actor=key_name(request.scope))
        return JSON(revision_json(rev, full=False))

    async def fork(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, ForkRequest)
        rev = await service.afork(sid, body.at, body.model_dump(exclude={"at"}),
                                  actor=key_name(request.scope))
        return JSON(revision_json(rev, full=False), status_code=201,
                    headers={"location": session_url(rev.sid)})

    async def report(request: Request) -> Response:
        sid = sid_of(request)
        revs = await call(lambda: service.history(sid))
        if not revs:
            service.head(sid)  # UNKNOWN_SESSION
        lineage = await call(lambda: service.lineage(revs[-1]))
        html = render_report(service.engine.driver.definition, revs, lineage=lineage)
        return HTMLResponse(html, headers={
            "content-disposition": f'attachment; filename="claimfsm-{sid[:64]}.html"'})

    async def export(request: Request) -> Response:
        sid = sid_of(request)
        data = await call(lambda: service.record(sid))
        return Response(data, media_type="application/x-ndjson", headers={
            "content-disposition": f'attachment; filename="claimfsm-{sid[:64]}.jsonl"'})

    async def check(request: Request) -> Response:
        sid = sid_of(request)
        return JSON(await call(lambda: service.check(sid)))

    async def records(request: Request) -> Response:
        return JSON({"records": service.record_names()})

    async def replay(request: Request) -> Response:
        if media_type(request.headers.get("content-type"))[0] == MULTIPART:
            data, fields = await read_upload(request)
            mode = fields.get("mode") or "strict"
            if data is None:
                if not fields.get("name"):
                    raise BadInput("file: upload a record or give a name", field="file")
                data, source = service.record_bytes(fields["name"])
            else:
                source = fields.get("source", "upload")
        else:
            body = await _body(request, ReplayRequest)
            data, source = service.record_bytes(body.name)
            mode = body.mode
        result = await call(lambda: replay_bytes(data, source, mode))
        return JSON(result["report"].to_json())

    async def document(request: Request) -> Response:
        doc_id = str(request.path_params["doc_id"])
        doc = await call(lambda: service.document(doc_id))
        if doc is None:
            raise NotFound(f"doc_id: no document {doc_id!r} in the evidence index",
                           field="doc_id")
        return JSON(doc)

    async def machine(request: Request) -> Response:
        d = service.engine.driver.definition
        return JSON({"name": d.name, "initial": d.initial, "failure": d.failure,
                     "states": [{"name": s.name, "skill": s.skill, "final": s.final}
                                for s in d.states],
                     "transitions": [list(t) for t in d.transitions]})

    v1 = "/api/v1"
    return [
        Route(f"{v1}/sessions", list_sessions, methods=["GET"]),
        Route(f"{v1}/sessions", create, methods=["POST"]),
        Route(f"{v1}/sessions/{{sid}}", session, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}", delete, methods=["DELETE"]),
        Route(f"{v1}/sessions/{{sid}}/head", head, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/history", history, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/revisions/{{rev}}", revision, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/diff", diff, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/step", step, methods=["POST"]),
        Route(f"{v1}/sessions/{{sid}}/run", run, methods=["POST"]),
        Route(f"{v1}/sessions/{{sid}}/rollback", rollback, methods=["POST"]),
        Route(f"{v1}/sessions/{{sid}}/fork", fork, methods=["POST"]),
        Route(f"{v1}/sessions/{{sid}}/report", report, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/record", export, methods=["GET"]),
        Route(f"{v1}/sessions/{{sid}}/check", check, methods=["GET"]),
        Route(f"{v1}/records", records, methods=["GET"]),
        Route(f"{v1}/replay", replay, methods=["POST"]),
        Route(f"{v1}/documents/{{doc_id}}", document, methods=["GET"]),
        Route(f"{v1}/machine", machine, methods=["GET"]),
    ]
