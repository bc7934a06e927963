"""The HTTP API's request bodies: validated where they enter, strictly (unknown fields
refused, a number is a JSON integer: ``true``, ``"3"`` and ``3.0`` are not; every number
within its bounds, none past the store's 64-bit integers), so a bad request is a 422
naming its field. The OpenAPI document takes its request schemas from them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from claimfsm.ui.queries import MAX_INT

__all__ = ["EditRequest", "ForkRequest", "InputRequest", "KeyAdded", "KeyList", "KeyOut",
           "KeyRequest", "ReplayRequest", "ResumeRequest", "RollbackRequest", "RunRequest",
           "StartRequest", "StepRequest"]


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", strict=True)


class StartRequest(_Body):
    """Start a session for ``claim``; the profile fields default to the config file's."""

    claim: str = Field(min_length=1)
    retrieval: Literal["lexical", "hybrid"] | None = None
    judge: Literal["lexical", "learned"] | None = None
    stance_model: str | None = Field(default=None, min_length=1, max_length=4096)
    review: Literal["never", "low_confidence", "always"] | None = None
    pause_before: list[str] | None = Field(default=None, max_length=100)
    pause_after: list[str] | None = Field(default=None, max_length=100)


class StepRequest(_Body):
    """Fire one transition; with ``expected_rev``, only if the head is still that revision."""

    expected_rev: int | None = Field(default=None, ge=0, le=MAX_INT)


class RunRequest(StepRequest):
    """Step until a final state (at most ``max_steps``)."""

    max_steps: int = Field(default=1000, ge=1, le=10_000)


class RollbackRequest(StepRequest):
    """Rewind to revision ``to`` (``reopen`` a FAILED session)."""

    to: int = Field(ge=0, le=MAX_INT)
    reopen: bool = False


class ForkRequest(_Body):
    """Fork at revision ``at`` into a new session; a profile field given (a what-if
    fork) changes the parent's profile for the fork, which runs on with it from ``at``."""

    at: int = Field(ge=0, le=MAX_INT)
    retrieval: Literal["lexical", "hybrid"] | None = None
    judge: Literal["lexical", "learned"] | None = None
    stance_model: str | None = Field(default=None, max_length=4096)


class ReplayRequest(_Body):
    """Replay an offered record (``GET /api/v1/records``) by name."""

    name: str = Field(min_length=1)
    mode: Literal["strict", "tools", "live"] = "strict"


class ResumeRequest(StepRequest):
    """Continue a paused session and run it on to its next stop; ``actor`` (default
    ``api``) is recorded in the ``Resumed`` event."""

    actor: str = Field(default="api", min_length=1, max_length=200, pattern=r"\S")


class InputRequest(ResumeRequest):
    """The input a waiting session waits for (REVIEW: ``{"decision": "approve"}``, an
    override with verdict and reason, or a send-back with queries/doc_ids and reason),
    committed as one revision; then the session runs on to its next stop."""

    input: Any


class EditRequest(ResumeRequest):
    """Set declared editable fields of a waiting or paused session (``set``: field ->
    new value, e.g. ``{"evidence.s1": [...]}``), as one revision."""

    set: dict[str, Any] = Field(min_length=1)


class KeyRequest(_Body):
    """An API key to add (admin); ``expires`` as ``keys add --expires`` (30d, 12h)."""

    # The patterns of state.keys (check_name, parse_duration), so the schema says them.
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
    role: Literal["read", "review", "write", "admin"]
    expires: str | None = Field(default=None, pattern=r"^[1-9][0-9]{0,5}[smhdw]$")


# The answers of /api/v1/keys (the admin's; docs/security.md): described for the OpenAPI
# document, as claimfsm.ui.schemas describes the others.
class _Key(BaseModel):
    """The fields of a key that ``claimfsm keys list --json`` shows: never its text."""

    model_config = ConfigDict(defer_build=True)

    name: str
    role: Literal["read", "review", "write", "admin"]
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    created_by: str | None
    revoked_by: str | None


class KeyOut(_Key):
    """A key as ``claimfsm keys list --json`` shows it: never its text."""

    status: Literal["live", "expired", "revoked"]


class KeyList(BaseModel):
    """Every key of the store, oldest first."""

    model_config = ConfigDict(defer_build=True)

    keys: list[KeyOut]


class KeyAdded(_Key):
    """A new key with its text (``claimfsm keys add --json``): the only time it is shown."""

    key: str
