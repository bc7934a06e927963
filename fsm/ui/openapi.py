"""The OpenAPI document of ``/api/v1``, derived from models: each operation's query and
path parameters from :mod:`claimfsm.ui.queries`, its body from :mod:`claimfsm.ui.models`
(the same models validate the requests, strictly), its answer from
:mod:`claimfsm.ui.schemas`, and only the error codes it can answer, each under its
:class:`~claimfsm.ErrorCode` status. A test checks the table and the app's routes agree;
docs/ui.md's API reference is generated from it (:mod:`claimfsm.ui.docs`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from claimfsm._base.codes import ErrorCode
from claimfsm.ui.models import (
    EditRequest,
    ForkRequest,
    InputRequest,
    ReplayRequest,
    ResumeRequest,
    RollbackRequest,
    RunRequest,
    StartRequest,
    StepRequest,
)
from claimfsm.ui.queries import (
    CompareQuery,
    DiffQuery,
    HeadQuery,
    HistoryQuery,
    Query,
    RevisionPath,
    SessionsQuery,
)
from claimfsm.ui.schemas import (
    Check,
    Compare,
    Diff,
    Document,
    ErrorBody,
    HeadBrief,
    HistoryOut,
    InputOut,
    Machine,
    Records,
    ReplayOut,
    ResumeOut,
    RevisionOut,
    RevisionShort,
    SessionOut,
    SessionsPage,
    StepOut,
    TombstoneOut,
    VerdictOut,
)

if TYPE_CHECKING:
    from claimfsm.engine.machine import MachineDef

__all__ = ["COMMON", "ENDPOINTS", "Op", "markdown", "openapi"]

_E = ErrorCode
#: What any operation may answer: a Host it does not serve, a cross-origin page, a bug,
#: a store that cannot be read or written.
COMMON = (_E.HOST_NOT_ALLOWED, _E.CROSS_ORIGIN, _E.INTERNAL, _E.STORE_ERROR, _E.STORE_IO,
          _E.STORE_CORRUPT, _E.STORE_UNAVAILABLE, _E.STORE_BUSY)
_QUERY = (_E.BAD_INPUT,)
_BODY = (_E.BAD_INPUT, _E.INPUT_TOO_LARGE, _E.UNSUPPORTED_MEDIA_TYPE, _E.REQUEST_TIMEOUT)
_WRITE = (_E.STORE_FULL, _E.STORE_READ_ONLY)
_SID = (_E.UNKNOWN_SESSION,)
_REV = (_E.UNKNOWN_SESSION, _E.UNKNOWN_REVISION)
_MOVE = (_E.REV_CONFLICT, _E.SESSION_FINISHED, _E.SESSION_FAILED, _E.ILLEGAL_TRANSITION,
         _E.MACHINE_MISMATCH, _E.VERSION_MISMATCH, _E.NOT_WAITING, _E.UNKNOWN_SKILL)
_PROFILE = (_E.BAD_PROFILE, _E.BAD_CONFIG, _E.MODEL_NOT_FOUND, _E.MODEL_UNAVAILABLE,
            _E.BAD_MODEL, _E.SEMANTIC_UNAVAILABLE)
_RECORD = (_E.BAD_RECORD, _E.RECORD_TAMPERED, _E.BAD_CONFIG, _E.BAD_PROFILE,
           _E.MACHINE_MISMATCH, _E.UNKNOWN_SKILL)


@dataclass(frozen=True)
class Op:
    """One operation: what it takes, what it answers and the codes it may answer with."""

    method: str
    path: str
    op_id: str
    summary: str
    answer: type[BaseModel] | str  # a model, or the media type of a file it answers
    status: int = 200
    query: type[Query] | None = None
    body: type[BaseModel] | None = None
    errors: tuple[ErrorCode, ...] = ()
    upload: bool = False  # the body may also be a multipart upload
    path_model: type[Query] | None = None


_S = "/api/v1/sessions/{sid}"
ENDPOINTS: tuple[Op, ...] = (
    Op("get", "/api/v1/sessions", "listSessions", "List sessions, newest first (keyset "
       "paging)", SessionsPage, query=SessionsQuery, errors=_QUERY),
    Op("post", "/api/v1/sessions", "startSession", "Start a session (revision 0); "
       "`Location` names it", RevisionShort, 201, body=StartRequest,
       errors=_BODY + _WRITE + _PROFILE),
    Op("get", _S, "getSession", "A session: summary, verdict, head and lineage "
       "(forked_from, forks)", SessionOut, errors=_SID),
    Op("delete", _S, "deleteSession", "Delete the session, leaving a tombstone",
       TombstoneOut, errors=_SID + _WRITE),
    Op("get", f"{_S}/head", "getHead", "The head revision (brief=1: sid, rev, fsm, ts)",
       HeadBrief, query=HeadQuery, errors=_SID + _QUERY),
    Op("get", f"{_S}/history", "getHistory", "Revisions, oldest first (paged)", HistoryOut,
       query=HistoryQuery, errors=_SID + _QUERY),
    Op("get", f"{_S}/revisions/{{rev}}", "getRevision", "One revision with its state",
       RevisionOut, errors=_REV + _QUERY, path_model=RevisionPath),
    Op("get", f"{_S}/diff", "diffRevisions", "Field-level diff of two revisions", Diff,
       query=DiffQuery, errors=_REV + _QUERY),
    Op("post", f"{_S}/step", "stepSession", "Fire one transition", StepOut,
       body=StepRequest, errors=_BODY + _WRITE + _SID + _MOVE),
    Op("post", f"{_S}/run", "runSession", "Step to the end (or the next stop)", VerdictOut,
       body=RunRequest, errors=_BODY + _WRITE + _SID + _MOVE),
    Op("post", f"{_S}/input", "giveInput", "Give a waiting session its input (one "
       "revision, InputReceived) and run it on", InputOut, body=InputRequest,
       errors=_BODY + _WRITE + _SID + _MOVE),
    Op("post", f"{_S}/resume", "resumeSession", "Continue a paused session and run it on",
       ResumeOut, body=ResumeRequest, errors=_BODY + _WRITE + _SID + _MOVE),
    Op("patch", _S, "editSession", "Edit declared fields of a waiting or paused session "
       "(one revision, Edited)", RevisionShort, body=EditRequest,
       errors=_BODY + _WRITE + _SID + (_E.REV_CONFLICT, _E.NOT_EDITABLE)),
    Op("post", f"{_S}/rollback", "rollbackSession", "Rewind to a revision (a new head)",
       RevisionShort, body=RollbackRequest,
       errors=_BODY + _WRITE + _REV + (_E.REV_CONFLICT, _E.SESSION_FAILED,
                                       _E.VERSION_MISMATCH)),
    Op("post", f"{_S}/fork", "forkSession", "Fork at a revision into a new session; "
       "`Location` names it; retrieval, judge or stance_model make it a what-if fork",
       RevisionShort, 201, body=ForkRequest,
       errors=_BODY + _WRITE + _REV + (_E.CHAIN_BROKEN,)),
    Op("get", f"{_S}/report", "getReport", "The self-contained HTML report, as `claimfsm "
       "report SID --html FILE`", "text/html", errors=_SID),
    Op("get", f"{_S}/record", "getRecord", "The session's record, the bytes `claimfsm "
       "export SID` writes", "application/x-ndjson", errors=_SID),
    Op("get", f"{_S}/check", "checkSession", "Verify the session's hash chain (what "
       "`claimfsm fsck` checks)", Check, errors=_SID),
    Op("get", "/api/v1/records", "listRecords", "Record files offered for replay", Records),
    Op("post", "/api/v1/replay", "replayRecord", "Replay an offered record (JSON) or an "
       "uploaded one (multipart: file, mode)", ReplayOut, body=ReplayRequest,
       errors=_BODY + _RECORD, upload=True),
    Op("get", "/api/v1/documents/{doc_id}", "getDocument", "A document of the evidence "
       "index", Document, errors=(_E.NOT_FOUND,)),
    Op("get", "/api/v1/compare", "compareSessions", "Two sessions side by side: verdicts, "
       "evidence, how they are related and the first revision where they differ", Compare,
       query=CompareQuery, errors=_QUERY + _SID),
    Op("get", "/api/v1/machine", "getMachine", "The machine definition", Machine),
    Op("get", "/api/v1/openapi.json", "getOpenapi", "This document (OpenAPI 3.1)",
       "application/json"),
)


def _ref(model: type[BaseModel], schemas: dict[str, Any]) -> dict[str, Any]:
    if model.__name__ not in schemas:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _params(model: type[Query], where: str) -> list[dict[str, Any]]:
    schema = model.model_json_schema()
    out = []
    for name, prop in schema["properties"].items():
        text = prop.pop("description", "")
        prop.pop("title", None)
        # A query string has no null: an optional parameter is simply left out.
        kinds = [k for k in prop.pop("anyOf", []) if k.get("type") != "null"]
        if kinds:
            prop.update(kinds[0])
        if prop.get("default", 0) is None:
            del prop["default"]
        out.append({"name": name, "in": where, "required": name in schema.get("required", ()),
                    "description": text, "schema": prop})
    return out


def _path_params(op: Op) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in ("sid", "doc_id"):
        if "{" + name + "}" in op.path:
            out.append({"name": name, "in": "path", "required": True,
                        "schema": {"type": "string", "minLength": 1}})
    if op.path_model is not None:
        out += _params(op.path_model, "path")
    return out


def _errors(codes: Iterable[ErrorCode]) -> dict[int, list[str]]:
    by_status: dict[int, list[str]] = {}
    for code in codes:
        listed = by_status.setdefault(code.http, [])
        if str(code) not in listed:
            listed.append(str(code))
    return dict(sorted(by_status.items()))


def errors_of(op: Op) -> dict[int, list[str]]:
    """The codes ``op`` may answer, by HTTP status."""
    return _errors((*op.errors, *COMMON))


def _operation(op: Op, schemas: dict[str, Any]) -> dict[str, Any]:
    if isinstance(op.answer, str):
        content = {op.answer: {"schema": {"type": "object"} if op.answer.endswith("json")
                               else {"type": "string"}}}
    else:
        content = {"application/json": {"schema": _ref(op.answer, schemas)}}
    success: dict[str, Any] = {"description": op.summary, "content": content}
    if op.status == 201:
        success["headers"] = {"Location": {"description": "the new session's URL",
                                           "required": True, "schema": {"type": "string"}}}
    responses: dict[str, Any] = {str(op.status): success}
    for status, codes in errors_of(op).items():
        error = _ref(ErrorBody, schemas)
        responses[str(status)] = {"description": ", ".join(codes), "content": {
            "application/json": {"schema": error}}}
    out: dict[str, Any] = {"operationId": op.op_id, "summary": op.summary,
                           "parameters": _path_params(op) + (
                               _params(op.query, "query") if op.query else []),
                           "responses": responses}
    if op.body is not None:
        body = {"application/json": {"schema": _ref(op.body, schemas)}}
        if op.upload:
            body["multipart/form-data"] = {"schema": {
                "type": "object", "required": ["file"], "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "mode": {"type": "string", "enum": ["strict", "tools", "live"]}}}}
        required = any(f.is_required() for f in op.body.model_fields.values())
        out["requestBody"] = {"required": required, "content": body}
    return out


def openapi(machine: MachineDef | None = None,
            records: list[str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document (``machine``: its non-final states are the values the
    pause lists take, default the claim machine; ``records``: the names a replay may
    ask for, when known)."""
    from claimfsm.engine.machine import DEFAULT_MACHINE

    machine = machine or DEFAULT_MACHINE
    names = sorted(set(machine.names) - machine.finals)  # where a session may pause
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for op in ENDPOINTS:
        paths.setdefault(op.path, {})[op.method] = _operation(op, schemas)
    start = schemas["StartRequest"]["properties"]
    for key in ("pause_before", "pause_after"):
        start[key]["anyOf"][0]["items"] = {"type": "string", "enum": names}
    if records:
        schemas["ReplayRequest"]["properties"]["name"] = {"type": "string", "enum": records}
    return {"openapi": "3.1.0",
            "info": {"title": "claimfsm", "version": "1",
                     "description": "Drive and inspect claim-verification sessions. "
                                    "Errors: {\"error\": {\"code\", \"msg\", \"field\"}}."},
            "paths": paths, "components": {"schemas": schemas}}


def markdown() -> str:
    """The API reference of docs/ui.md, generated from the table."""
    lines = ["| method | path | operationId | what | success | its own errors |",
             "|---|---|---|---|---|---|"]
    common = set(COMMON)
    for op in ENDPOINTS:
        body = f" (body: `{op.body.__name__}`)" if op.body is not None else ""
        answer = op.answer if isinstance(op.answer, str) else f"`{op.answer.__name__}`"
        own = "; ".join(f"{status}: {', '.join(codes)}" for status, codes in
                        _errors(c for c in op.errors if c not in common).items()) or "-"
        lines.append(f"| {op.method.upper()} | `{op.path}` | `{op.op_id}` | {op.summary}"
                     f"{body} | {op.status}: {answer} | {own} |")
    lines += ["", "Request bodies (unknown fields are refused with 422; numbers are JSON "
              "integers, never `true`, `\"3\"` or `3.0`):", ""]
    seen: set[str] = set()
    for op in ENDPOINTS:
        if op.body is None or op.body.__name__ in seen:
            continue
        seen.add(op.body.__name__)
        fields = ", ".join(f"`{name}`" + ("" if f.is_required() else " (optional)")
                           for name, f in op.body.model_fields.items())
        doc = (op.body.__doc__ or "").replace("``", "`")
        lines.append(f"- `{op.body.__name__}`: {fields}. {doc}".rstrip())
    lines += ["", "Errors: `{\"error\": {\"code\", \"msg\", \"field\"}}`. Each operation "
              "declares the codes it may answer; every operation may also answer:", ""]
    lines += [f"- {status}: {', '.join(f'`{c}`' for c in codes)}"
              for status, codes in _errors(COMMON).items()]
    return "\n".join(lines) + "\n"
