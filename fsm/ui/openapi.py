"""The OpenAPI document of ``/api/v1``, built from the request models and a table of
routes (a test checks the table and the app's routes agree); docs/ui.md's API reference
is generated from it (:mod:`claimfsm.ui.docs`)."""

from __future__ import annotations

from typing import Any

from claimfsm.state.catalog import SummaryPage
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

__all__ = ["ENDPOINTS", "markdown", "openapi"]

_SID = {"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}}


def _q(name: str, kind: str, text: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind},
            "description": text}


# (method, path, summary, parameters, request model, success status, success description)
ENDPOINTS: list[tuple[str, str, str, list[dict[str, Any]], Any, int, str]] = [
    ("get", "/api/v1/sessions", "List sessions, newest first (keyset paging)",
     [_q("q", "string", "claim text contains (case-insensitive)"),
      _q("fsm", "string", "state is"), _q("verdict", "string", "verdict is (none: no verdict)"),
      _q("version", "string", "machine version is (unknown: older than versions)"),
      _q("status", "string", "WAITING: only sessions waiting for a person"),
      _q("limit", "integer", "page size, 1-500 (50)"),
      _q("before", "integer", "the previous page's `next`")], None, 200,
     "`{items: [{seq, sid, claim, fsm, verdict, revisions, updated, version, status, "
     "forked_from}], next}`"),
    ("post", "/api/v1/sessions", "Start a session (revision 0)", [], StartRequest, 201,
     "the revision as `claimfsm start --json`"),
    ("get", "/api/v1/sessions/{sid}", "A session: summary, verdict, head and lineage", [_SID],
     None, 200, "`{summary, verdict, head, forked_from: {sid, rev, at, changes} | null, "
     "forks: [{sid, rev, at}]}`"),
    ("delete", "/api/v1/sessions/{sid}", "Delete the session, leaving a tombstone (will need "
     "the admin role)", [_SID], None, 200,
     "the tombstone as `claimfsm delete --json`: `{sid, deleted_at, actor, head, fsm, "
     "last_hash}`"),
    ("get", "/api/v1/sessions/{sid}/head", "The head revision (brief=1: sid, rev, fsm, ts)",
     [_SID, _q("brief", "string", "any value: only sid, rev, fsm and ts")], None, 200,
     "the revision as `claimfsm show --json`"),
    ("get", "/api/v1/sessions/{sid}/history", "Revisions, oldest first (paged)",
     [_SID, _q("offset", "integer", "first revision (0)"),
      _q("limit", "integer", "1-1000 (100)")], None, 200,
     "`{items, total, next_offset}`, items as `claimfsm history --json`"),
    ("get", "/api/v1/sessions/{sid}/revisions/{rev}", "One revision with its state",
     [_SID, {"name": "rev", "in": "path", "required": True, "schema": {"type": "integer"}}],
     None, 200, "the revision as `claimfsm show --rev N --json`"),
    ("get", "/api/v1/sessions/{sid}/diff", "Field-level diff of two revisions",
     [_SID, _q("a", "integer", "from revision", True), _q("b", "integer", "to revision", True)],
     None, 200, "`{sid, a, b, changes: [{path, op, before, after}]}`"),
    ("post", "/api/v1/sessions/{sid}/step", "Fire one transition", [_SID], StepRequest, 200,
     "as `claimfsm step --json`: `{sid, before, after, skill, committed, rev, envelope}`"),
    ("post", "/api/v1/sessions/{sid}/run", "Step to the end", [_SID], RunRequest, 200,
     "as `claimfsm verify --json`: `{sid, verdict, rev, fsm, subclaims, status, waiting, "
     "provenance}`"),
    ("post", "/api/v1/sessions/{sid}/input", "Give a waiting session its input (one "
     "revision, InputReceived) and run it on", [_SID], InputRequest, 200,
     "`{input_rev, ...}` and the rest as `claimfsm verify --json`"),
    ("post", "/api/v1/sessions/{sid}/resume", "Continue a paused session and run it on",
     [_SID], ResumeRequest, 200, "`{resume_rev, ...}` and the rest as `claimfsm verify --json`"),
    ("patch", "/api/v1/sessions/{sid}", "Edit declared fields of a waiting or paused session "
     "(one revision, Edited)", [_SID], EditRequest, 200,
     "the new head as `claimfsm edit --json`"),
    ("post", "/api/v1/sessions/{sid}/rollback", "Rewind to a revision (a new head)", [_SID],
     RollbackRequest, 200, "the new head as `claimfsm rollback --json`"),
    ("post", "/api/v1/sessions/{sid}/fork", "Fork at a revision into a new session (a what-if "
     "fork with retrieval, judge, stance_model)", [_SID], ForkRequest, 201,
     "the new session's head (its own first revision, `Forked`) as `claimfsm fork --json`"),
    ("get", "/api/v1/sessions/{sid}/report", "The self-contained HTML report", [_SID], None,
     200, "text/html, as `claimfsm report SID --html FILE`"),
    ("get", "/api/v1/sessions/{sid}/record", "The session's record (JSONL)", [_SID], None,
     200, "application/x-ndjson, the bytes `claimfsm export SID` writes"),
    ("get", "/api/v1/sessions/{sid}/check", "Verify the session's hash chain", [_SID], None,
     200, "`{sid, revisions, rev, problem, detail, ok}` (what `claimfsm fsck` checks)"),
    ("get", "/api/v1/records", "Record files offered for replay", [], None, 200,
     "`{records: [name]}`"),
    ("post", "/api/v1/replay", "Replay an offered record (JSON) or an uploaded one "
     "(multipart: file, mode)", [], ReplayRequest, 200, "as `claimfsm replay --json`"),
    ("get", "/api/v1/documents/{doc_id}", "A document of the evidence index",
     [{"name": "doc_id", "in": "path", "required": True, "schema": {"type": "string"}}], None,
     200, "`{doc_id, title, text, source}`"),
    ("get", "/api/v1/compare", "Two sessions side by side",
     [_q("a", "string", "a session id", True), _q("b", "string", "another session id", True)],
     None, 200, "`{a, b, relation, same_revisions, first_difference: {rev, a, b, total, "
     "changes} | null}`; each side `{sid, claim, rev, fsm, verdict, profile, forked_from, "
     "subclaims}`"),
    ("get", "/api/v1/machine", "The machine definition", [], None, 200,
     "`{name, initial, failure, states, transitions}`"),
    ("get", "/api/v1/openapi.json", "This document", [], None, 200, "OpenAPI 3.1"),
]

_ERRORS = {
    "404": "UNKNOWN_SESSION, UNKNOWN_REVISION, NOT_FOUND",
    "409": "REV_CONFLICT (the head moved: `expected_rev`), SESSION_FINISHED, SESSION_FAILED, "
           "ILLEGAL_TRANSITION, NOT_WAITING, NOT_EDITABLE",
    "413": "INPUT_TOO_LARGE",
    "415": "UNSUPPORTED_MEDIA_TYPE (a body must be sent as application/json)",
    "422": "BAD_INPUT (the message and `field` name the field), BAD_RECORD, and every "
           "profile error (BAD_PROFILE, BAD_CONFIG, MODEL_NOT_FOUND, SEMANTIC_UNAVAILABLE...)",
}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document."""
    error = {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "msg"], "properties": {
            "code": {"type": "string"}, "msg": {"type": "string"},
            "field": {"type": "string"}}}}}
    schemas: dict[str, Any] = {"Error": error, "SummaryPage": SummaryPage.model_json_schema(
        ref_template="#/components/schemas/{model}")}
    schemas.update(schemas["SummaryPage"].pop("$defs", {}))
    paths: dict[str, Any] = {}
    for method, path, summary, params, model, status, desc in ENDPOINTS:
        op: dict[str, Any] = {"summary": summary, "parameters": params,
                              "responses": {str(status): {"description": desc}}}
        if model is not None:
            schemas[model.__name__] = model.model_json_schema()
            op["requestBody"] = {"required": False, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}
        for code, text in _ERRORS.items():
            op["responses"][code] = {"description": text, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}}
        paths.setdefault(path, {})[method] = op
    return {"openapi": "3.1.0",
            "info": {"title": "claimfsm", "version": "1",
                     "description": "Drive and inspect claim-verification sessions. No "
                                    "authentication: bind to loopback or put a proxy in front."},
            "paths": paths, "components": {"schemas": schemas}}


def markdown() -> str:
    """The API reference of docs/ui.md, generated from :func:`openapi`."""
    lines = ["| method | path | what | success |", "|---|---|---|---|"]
    for method, path, summary, _params, model, status, desc in ENDPOINTS:
        body = f" (body: `{model.__name__}`)" if model is not None else ""
        lines.append(f"| {method.upper()} | `{path}` | {summary}{body} | {status}: {desc} |")
    lines += ["", "Request bodies (unknown fields are refused with 422):", ""]
    for _m, _p, _s, _params, model, _st, _d in ENDPOINTS:
        if model is None or f"- `{model.__name__}`" in "\n".join(lines):
            continue
        fields = ", ".join(f"`{name}`" + ("" if f.is_required() else " (optional)")
                           for name, f in model.model_fields.items())
        doc = (model.__doc__ or "").replace("``", "`")
        lines.append(f"- `{model.__name__}`: {fields}. {doc}".rstrip())
    lines += ["", "Errors: `{\"error\": {\"code\", \"msg\", \"field\"}}` with these statuses:", ""]
    lines += [f"- {code}: {text}" for code, text in _ERRORS.items()]
    lines.append("- 500: INTERNAL (a bug; never a traceback), 503: STORE_BUSY")
    return "\n".join(lines) + "\n"

