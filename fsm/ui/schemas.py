"""The HTTP API's answers as models: what the OpenAPI document declares each operation
returns (the CLI's JSON shapes, :mod:`claimfsm.engine.views`). They describe, they do not
build: the handlers answer the CLI's dicts, and tests/ui checks each answer against its
schema (Schemathesis does too). Fields a shape may grow carry on (``extra="allow"``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ANSWERS", "Change", "Check", "Compare", "Diff", "Document", "ErrorBody", "HeadBrief",
    "HistoryOut", "InputOut", "Machine", "Records", "ReplayOut", "ResumeOut", "RevisionOut",
    "RevisionShort", "SessionItem", "SessionOut", "SessionsPage", "StepOut", "TombstoneOut",
    "VerdictOut",
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class RevisionShort(_Out):
    """A revision without its state (``claimfsm show --json`` leaves it out too)."""

    sid: str
    rev: int = Field(ge=0)
    parent_rev: int | None
    fsm: str
    skill: str | None
    ts: str
    envelope: dict[str, Any] | None
    events: list[dict[str, Any]]
    profile: dict[str, Any] | None
    status: str
    waiting: dict[str, Any] | None


class RevisionOut(RevisionShort):
    """A revision with its state (``claimfsm show --json``)."""

    state: dict[str, Any]


class HeadBrief(_Out):
    """The head: the full revision, or with ``brief`` only sid, rev, fsm and ts."""

    sid: str
    rev: int = Field(ge=0)
    fsm: str
    ts: str


class SessionItem(_Out):
    """One listed session."""

    seq: int
    sid: str
    claim: str
    fsm: str
    verdict: str | None
    revisions: int
    updated: str
    status: str
    version: str
    forked_from: dict[str, Any] | None = None


class SessionsPage(_Out):
    """A page of sessions, newest first; ``next`` is the next page's ``before``."""

    items: list[SessionItem]
    next: int | None


class VerdictOut(_Out):
    """``claimfsm verify --json``."""

    sid: str
    verdict: str | None
    rev: int
    fsm: str
    subclaims: list[dict[str, Any]]
    status: str
    waiting: dict[str, Any] | None


class InputOut(VerdictOut):
    """The input's revision, then the session run on as ``verify --json``."""

    input_rev: int


class ResumeOut(VerdictOut):
    """The resume's revision, then the session run on as ``verify --json``."""

    resume_rev: int


class SessionOut(_Out):
    """A session: its summary, verdict and head."""

    summary: dict[str, Any]
    verdict: VerdictOut
    head: RevisionShort
    forked_from: dict[str, Any] | None = None
    forks: list[dict[str, Any]] = []


class StepOut(_Out):
    """``claimfsm step --json``."""

    sid: str
    before: str
    after: str | None
    skill: str | None
    committed: bool
    rev: int | None
    envelope: dict[str, Any]


class HistoryOut(_Out):
    """A page of revisions, oldest first."""

    items: list[RevisionShort]
    total: int
    next_offset: int | None


class Change(_Out):
    """One changed field."""

    path: str
    op: str
    before: Any = None
    after: Any = None


class Diff(_Out):
    """What changed from revision ``a`` to revision ``b``."""

    sid: str
    a: int
    b: int
    changes: list[Change]


class TombstoneOut(_Out):
    """A deleted session's tombstone (``claimfsm delete --json``)."""

    sid: str
    deleted_at: str
    actor: str
    head: int
    fsm: str
    last_hash: str | None


class Check(_Out):
    """The session's hash chain verified."""

    sid: str
    ok: bool


class Records(_Out):
    """Record files offered for replay."""

    records: list[str]


class ReplayOut(_Out):
    """``claimfsm replay --json``."""

    source: str
    mode: str
    ok: bool


class Document(_Out):
    """A document of the evidence index."""

    doc_id: str
    text: str


class Machine(_Out):
    """The machine definition."""

    name: str
    initial: str
    failure: str | None
    states: list[dict[str, Any]]
    transitions: list[list[Any]]


class _Error(BaseModel):
    model_config = ConfigDict(defer_build=True)

    code: str
    msg: str
    field: str | None = None


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"code", "msg", "field"?}}``."""

    model_config = ConfigDict(defer_build=True)

    error: _Error


class Compare(_Out):
    """Two sessions side by side (``/api/v1/compare``): each side ``{sid, claim, rev, fsm,
    verdict, profile, forked_from, subclaims}``."""

    a: dict[str, Any]
    b: dict[str, Any]
    relation: str | None
    same_revisions: int
    first_difference: dict[str, Any] | None


ANSWERS: tuple[type[BaseModel], ...] = (
    Check, Compare, Diff, Document, ErrorBody, HeadBrief, HistoryOut, InputOut, Machine, Records,
    ReplayOut, ResumeOut, RevisionOut, RevisionShort, SessionOut, SessionsPage, StepOut,
    TombstoneOut, VerdictOut)

