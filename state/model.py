"""The session state: one frozen value per revision, updated only by ``model_copy``.

The state is claim-verification shaped but JSON-generic inside its slices, because
``state/`` sits beside ``skills/`` and imports neither: the driver maps skill output
(``d``) onto these fields.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "TOOL_SLICE",
    "RetryState",
    "Revision",
    "SessionState",
    "trusted",
]

M = TypeVar("M", bound=BaseModel)
_FIELDS_SET: dict[type[BaseModel], set[str]] = {}
_setattr = object.__setattr__
_new = object.__new__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """Build a model from values the engine or a store made itself, without validating
    them again (the hot path: validation happens once, where data enters).

    ``values`` must hold every field, already of the right types, nested models built;
    the dict becomes the model's own. Anything that comes from outside (a skill's input
    from stdin, a record, a config file) goes through ``model_validate`` instead.
    """
    every = _FIELDS_SET.get(cls)
    if every is None:
        every = _FIELDS_SET[cls] = set(cls.model_fields)
    obj = _new(cls)
    _setattr(obj, "__dict__", values)
    # Frozen models never add to their fields-set in place (``model_copy`` copies it
    # first), so they can share one; others get their own.
    _setattr(obj, "__pydantic_fields_set__",
             every if cls.model_config.get("frozen") else every.copy())
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj

# Fields that ``rb=tools`` restores (and only these): every trace of tool work.
# ``runtime`` (rate buckets, budget, deadline) is left out on purpose: it measures what was
# really spent, and a rollback does not give spent calls back.
TOOL_SLICE: tuple[str, ...] = (
    "tool_requests", "tool_results", "pages", "policy", "steps", "outputs",
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RetryState(_Frozen):
    """Attempts made in ``state`` and when the next one may run (ISO time)."""

    state: str
    attempts: int = Field(ge=0)
    next_at: str | None = None
    code: str | None = None


class SessionState(_Frozen):
    """Everything a session knows at one revision."""

    sid: str
    claim: str
    fsm: str
    entry_rev: int = 0
    config: dict[str, Any] = Field(default_factory=dict)
    subclaims: list[dict[str, Any]] = Field(default_factory=list)
    plans: list[dict[str, Any]] = Field(default_factory=list)
    tool_requests: list[dict[str, Any]] = Field(default_factory=list)
    tool_results: list[dict[str, Any]] = Field(default_factory=list)
    pages: dict[str, dict[str, Any]] = Field(default_factory=dict)
    policy: dict[str, Any] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    # Plan-step memory: each step's result (the part at its output_path) under its expected_key.
    outputs: dict[str, Any] = Field(default_factory=dict)
    followups: list[dict[str, Any]] = Field(default_factory=list)
    rounds: int = 0
    evidence: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    judgments: list[dict[str, Any]] = Field(default_factory=list)
    verdict: dict[str, Any] | None = None
    memory: dict[str, Any] = Field(default_factory=dict)
    retry: RetryState | None = None
    error: dict[str, str] | None = None
    # Tool-runtime counters that must survive restarts: rate buckets, budget, deadline.
    runtime: dict[str, Any] = Field(default_factory=dict)

    def restore_tools_from(self, earlier: SessionState) -> SessionState:
        """This state with the tool slice taken from ``earlier`` (``rb=tools``)."""
        return self.model_copy(update={k: getattr(earlier, k) for k in TOOL_SLICE})


class Revision(_Frozen):
    """One committed step of a session: append-only, never edited."""

    sid: str
    rev: int = Field(ge=0)
    parent_rev: int | None
    fsm: str
    skill: str | None
    envelope: dict[str, Any] | None
    state: SessionState
    ts: str
    events: list[dict[str, Any]] = Field(default_factory=list)
