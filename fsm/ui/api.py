"""The JSON HTTP API, ``/api/v1/...``: the CLI's session operations with the CLI's JSON
shapes (``step`` as ``claimfsm step --json``, ``run`` as ``verify --json``, revisions as
``show --json``). Errors are ``{"error": {"code", "msg", "field"?}}`` with the engine's
codes; :mod:`claimfsm.ui.app` maps each code to its HTTP status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from claimfsm.engine.errors import BadInput, ClaimFsmError, ErrorCode, InputTooLarge
from claimfsm.engine.views import MAX_HISTORY_PAGE, revision_json, step_json, verdict_json
from claimfsm.state.catalog import SummaryQuery, summary_of
from claimfsm.ui.models import (
    ForkRequest,
    ReplayRequest,
    RollbackRequest,
    RunRequest,
    StartRequest,
    StepRequest,
)
from claimfsm.ui.replaying import replay_bytes
from claimfsm.ui.report import render_report
from claimfsm.ui.service import Service

__all__ = [
    "API_ACTOR", "MAX_BODY", "MAX_RECORD", "api_routes", "bad_input", "query_int", "read_json",
    "read_upload",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

MAX_BODY = 1 << 20  # a JSON request body
MAX_RECORD = 32 << 20  # an uploaded record file
API_ACTOR = "api"  # the actor of a deletion through the API (no keys yet)


class JSON(JSONResponse):
    """orjson, keys in insertion order (as the CLI prints)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def bad_input(exc: ValidationError, where: str = "") -> BadInput:
    """The first validation problem as ``BAD_INPUT`` naming its field."""
    err = exc.errors()[0]
    name = ".".join(str(p) for p in err["loc"]) or where or "body"
    return BadInput(f"{name}: {err['msg']}", field=name)


class NotFound(ClaimFsmError):
    """A thing the API was asked for does not exist (not a session: those are the store's)."""

    code = ErrorCode.NOT_FOUND


class UnsupportedMedia(ClaimFsmError):
    """A request body that is not declared as JSON."""

    code = ErrorCode.UNSUPPORTED_MEDIA_TYPE


async def _body(request: Request, model: type[M]) -> M:
    # Only a JSON content type: a page on another site cannot send one without the
    # browser asking first (CORS), so it cannot drive sessions through a form post.
    kind = request.headers.get("content-type", "")
    if not kind.startswith("application/json"):
        raise UnsupportedMedia(f"content-type: {kind or 'none'}; send application/json",
                               field="content-type")
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
        return int(raw)
    except ValueError:
        raise BadInput(f"{name}: {raw!r} is not an integer", field=name) from None


def query_int(request: Request, name: str, default: int | None = None) -> int | None:
    """The query parameter ``name`` as an integer (``default`` when absent); any other
    text is a BAD_INPUT naming it."""
    return _int(request, name, default)


def _rev(request: Request, name: str = "rev") -> int:
    """An integer from the path (``rev``) or a required query parameter (``a``, ``b``)."""
    raw = request.path_params.get(name, request.query_params.get(name))
    if raw is None or raw == "":
        raise BadInput(f"{name}: required", field=name)
    try:
        return int(raw)
    except ValueError:
        raise BadInput(f"{name}: {raw!r} is not an integer", field=name) from None


def query_of(request: Request) -> SummaryQuery:
    """The sessions listing's query from ``q``, ``fsm``, ``verdict``, ``status``, ``limit``,
    ``before``."""
    p = request.query_params
    try:
        return SummaryQuery(limit=_int(request, "limit", 50), before=_int(request, "before"),
                            q=p.get("q") or None, fsm=p.get("fsm") or None,
                            verdict=p.get("verdict") or None, status=p.get("status") or None)
    except ValidationError as exc:
        raise bad_input(exc) from None


async def read_upload(request: Request) -> tuple[bytes | None, dict[str, str]]:
    """A multipart form's ``file`` (``None`` when empty) and its other fields."""
    async with request.form(max_part_size=MAX_RECORD) as form:
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        upload = form.get("file")
        data = None
        if upload is not None and not isinstance(upload, str) and upload.filename:
            data = await upload.read(MAX_RECORD + 1)
            fields["source"] = upload.filename
    if data is not None and len(data) > MAX_RECORD:
        raise InputTooLarge(f"file: over {MAX_RECORD} bytes", field="file", limit=MAX_RECORD)
    return data, fields


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
        head = await service.astart(body.claim, opts)
        return JSON(revision_json(head, full=False), status_code=201)

    async def session(request: Request) -> Response:
        sid = sid_of(request)
        head = await service.ahead(sid)
        lineage = await call(lambda: service.lineage(head))
        return JSON({"summary": summary_of(0, head).model_dump(exclude={"seq"}),
                     "verdict": verdict_json(head), "head": revision_json(head, full=False),
                     **lineage})

    async def delete(request: Request) -> Response:
        # No keys yet: every deletion is the API's. With API keys (issue 26) it needs the
        # admin role and the tombstone names the key.
        sid = sid_of(request)
        stone = await call(lambda: service.delete(sid, actor=API_ACTOR))
        return JSON(stone.model_dump(mode="json"))

    async def head(request: Request) -> Response:
        sid = sid_of(request)
        rev = await service.ahead(sid)
        if request.query_params.get("brief"):
            return JSON({"sid": rev.sid, "rev": rev.rev, "fsm": rev.fsm, "ts": rev.ts})
        return JSON(revision_json(rev))

    async def history(request: Request) -> Response:
        sid = sid_of(request)
        offset, limit = _int(request, "offset", 0), _int(request, "limit", 100)
        assert offset is not None and limit is not None  # they have defaults
        if offset < 0:
            raise BadInput(f"offset: {offset}, the first revision is 0", field="offset")
        if not 1 <= limit <= MAX_HISTORY_PAGE:
            raise BadInput(f"limit: {limit}, a page holds 1 to {MAX_HISTORY_PAGE} revisions",
                           field="limit")
        page = await call(lambda: service.history_page(sid, offset, limit))
        return JSON({"items": [revision_json(r, full=False) for r in page.items],
                     "total": page.total, "next_offset": page.next})

    async def revision(request: Request) -> Response:
        sid, rev = sid_of(request), _rev(request)
        return JSON(revision_json(await service.arevision(sid, rev)))

    async def diff(request: Request) -> Response:
        sid, a, b = sid_of(request), _rev(request, "a"), _rev(request, "b")
        changes = await call(lambda: service.diff(sid, a, b))
        return JSON({"sid": sid, "a": a, "b": b, "changes": changes})

    async def step(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, StepRequest)
        return JSON(step_json(await service.astep(sid, body.expected_rev)))

    async def run(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, RunRequest)
        done = await service.arun(sid, body.expected_rev, body.max_steps)
        return JSON(verdict_json(done))

    async def rollback(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, RollbackRequest)
        rev = await service.arollback(sid, body.to, reopen=body.reopen,
                                      expected_rev=body.expected_rev)
        return JSON(revision_json(rev, full=False))

    async def fork(request: Request) -> Response:
        sid, body = sid_of(request), await _body(request, ForkRequest)
        rev = await service.afork(sid, body.at, body.model_dump(exclude={"at"}))
        return JSON(revision_json(rev, full=False), status_code=201)

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
        if request.headers.get("content-type", "").startswith("multipart/"):
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
