"""The session state: one frozen value per revision, updated only by ``model_copy``.

The state is claim-verification shaped but JSON-generic inside its slices, because
``state/`` sits beside ``skills/`` and imports neither: the driver maps skill output
(``d``) onto these fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from claimfsm._base.models import Frozen, builder, trusted

__all__ = [
    "TOOL_SLICE",
    "Frozen",
    "RetryState",
    "Revision",
    "SessionState",
    "builder",
    "new_state",
    "trusted",
    "verdict_label",
]

# Fields that ``rb=tools`` restores (and only these): every trace of tool work.
# ``runtime`` (rate buckets, budget, deadline) is left out on purpose: it measures what was
# really spent, and a rollback does not give spent calls back.
TOOL_SLICE: tuple[str, ...] = (
    "tool_requests", "tool_results", "pages", "policy", "steps", "outputs",
)


class RetryState(Frozen):
    """Attempts made in ``state`` and when the next one may run (ISO time)."""

    state: str
    attempts: int = Field(ge=0)
    next_at: str | None = None
    code: str | None = None


class SessionState(Frozen):
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


class Revision(Frozen):
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


# Each field's default: a factory for the containers (each state gets fresh ones, as
# validation gives), a plain value otherwise (the required fields get theirs in new_state).
_DEFAULTS: tuple[tuple[str, Any, Any], ...] = tuple(
    (name, info.default_factory, None if info.is_required() else info.default)
    for name, info in SessionState.model_fields.items()
)


def new_state(sid: str, claim: str, fsm: str, config: Any, runtime: dict[str, Any]) -> SessionState:
    """A session's first state: ``SessionState(sid=..., claim=..., fsm=..., config=...,
    runtime=...)``, every other field at its default.

    ``sid``, ``claim`` and ``config`` come from outside: when they already are exactly what
    validation accepts unchanged (``str``, ``str``, a ``dict`` with ``str`` keys), the
    state is built from them and fresh defaults without running the validator; anything
    else goes through it, so what was refused still is, with the same error. ``runtime``
    is the engine's own.
    """
    if (type(sid) is str and type(claim) is str and type(fsm) is str and type(config) is dict
            and all(type(k) is str for k in config)):
        values: dict[str, Any] = {
            name: default if factory is None else factory()
            for name, factory, default in _DEFAULTS
        }
        values.update(sid=sid, claim=claim, fsm=fsm, config=dict(config), runtime=runtime)
        return trusted(SessionState, values)
    return SessionState(sid=sid, claim=claim, fsm=fsm, entry_rev=0, config=config,
                        runtime=runtime)


def verdict_label(verdict: dict[str, Any] | None) -> str | None:
    """The label of a state's verdict (``SUPPORTS``...), or ``None`` when it has none."""
    if not verdict:
        return None
    label = verdict.get("label")
    return label if isinstance(label, str) else None
