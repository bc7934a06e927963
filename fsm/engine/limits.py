"""Per-session limits of the tool runtime: deadline, tool-call budget, rate buckets.

Session config (``Driver.start(config=...)``, ``claimfsm start --deadline/--max-tool-calls``),
every key optional:

- ``deadline_s``: wall time in seconds from the session's start (injected clock);
- ``max_tool_calls``: tool calls the session may make, fallbacks included;
- ``max_tokens_total``: model tokens (``model.chat`` usage) the session may use;
- ``rate_limits``: ``{tool: {"capacity": n, "per_seconds": s}}`` (token buckets);
- ``max_concurrent_tools``: how many independent calls of one step run at once
  (:data:`DEFAULT_CONCURRENT_TOOLS` unless set; 1 runs them one by one).

What the runtime has spent lives in ``state.runtime`` so that a restarted process, a
replay or a fork meets exactly the same refusals: ``deadline_at`` (fixed at start),
``budget`` (``{"calls": n}``) and ``limits`` (each bucket's tokens and last refill time).
It is outside the tool slice: a rollback does not give spent calls back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from claimfsm._base.record import Record
from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.skills.context import ToolCall
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.tools.core import BudgetTracker
from claimfsm.skills.tools.gather import MAX_CONCURRENT_TOOLS
from claimfsm.skills.tools.limits import RateLimit, ToolLimits
from claimfsm.state.model import SessionState

__all__ = [
    "DEFAULT_CONCURRENT_TOOLS",
    "LIMIT_CODES",
    "MAX_DEADLINE_S",
    "MAX_TOOL_CALLS",
    "SessionConfigError",
    "SessionLimits",
    "SessionToolLimits",
    "check_config",
    "deadline_envelope",
    "initial_runtime",
    "limit_envelope",
    "next_runtime",
    "seconds_left",
]

#: Codes that end a session in FAILED at once: never retried, whatever the retry policy.
LIMIT_CODES: frozenset[str] = frozenset({"DEADLINE_EXCEEDED", "BUDGET_EXCEEDED",
                                         "TOKEN_BUDGET_EXCEEDED"})


class SessionConfigError(ClaimFsmError):
    """A session's limit configuration is malformed (the message names the key)."""

    code = ErrorCode.BAD_CONFIG


#: The largest deadline (about 31 years) and budget a session may set: beyond them a
#: timestamp or a counter would overflow, and no real session needs more.
MAX_DEADLINE_S = 1e9
MAX_TOOL_CALLS = 10**9


def _number(config: Mapping[str, Any], key: str, top: float = MAX_DEADLINE_S) -> float | None:
    value = config.get(key)
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 < value <= top):  # also refuses nan (every comparison is false)
        raise SessionConfigError(f"config.{key}: expected a number in (0, {top:g}], "
                                 f"got {value!r}", field=f"config.{key}")
    return float(value)


def _calls(config: Mapping[str, Any]) -> int | None:
    value = config.get("max_tool_calls")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOOL_CALLS:
        raise SessionConfigError(f"config.max_tool_calls: expected an integer in "
                                 f"0..{MAX_TOOL_CALLS}, got {value!r}",
                                 field="config.max_tool_calls")
    return value


def _tokens(config: Mapping[str, Any]) -> int | None:
    value = config.get("max_tokens_total")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOOL_CALLS:
        raise SessionConfigError(f"config.max_tokens_total: expected an integer in "
                                 f"0..{MAX_TOOL_CALLS}, got {value!r}",
                                 field="config.max_tokens_total")
    return value


#: Calls of one step in flight at once when the session's config does not say: enough for
#: a claim's 4 subclaims x 4 queries and its 4 claim-level searches to wait for the
#: slowest answer, not for the sum (as many as a RETRIEVAL step runs: RUN_CONFIG batch).
DEFAULT_CONCURRENT_TOOLS = 32


def _concurrent(config: Mapping[str, Any]) -> int:
    value = config.get("max_concurrent_tools")
    if value is None:
        return DEFAULT_CONCURRENT_TOOLS
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 1 <= value <= MAX_CONCURRENT_TOOLS):
        raise SessionConfigError(f"config.max_concurrent_tools: expected an integer in "
                                 f"1..{MAX_CONCURRENT_TOOLS}, got {value!r}",
                                 field="config.max_concurrent_tools")
    return value


def _rates(config: Mapping[str, Any]) -> dict[str, RateLimit]:
    raw = config.get("rate_limits") or {}
    if not isinstance(raw, Mapping):
        raise SessionConfigError("config.rate_limits: expected {tool: {capacity, per_seconds}}",
                                 field="config.rate_limits")
    out: dict[str, RateLimit] = {}
    for tool, spec in raw.items():
        where = f"config.rate_limits.{tool}"
        if not isinstance(spec, Mapping):
            raise SessionConfigError(f"{where}: expected {{capacity, per_seconds}}", field=where)
        cap, per = spec.get("capacity"), spec.get("per_seconds")
        if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_TOOL_CALLS:
            raise SessionConfigError(f"{where}.capacity: expected an integer >= 1, got {cap!r}",
                                     field=f"{where}.capacity")
        if (isinstance(per, bool) or not isinstance(per, (int, float))
                or not 0 < per <= MAX_DEADLINE_S):
            raise SessionConfigError(f"{where}.per_seconds: expected a number > 0, got {per!r}",
                                     field=f"{where}.per_seconds")
        out[str(tool)] = RateLimit(capacity=cap, per_seconds=float(per))
    return out


def check_config(config: Mapping[str, Any]) -> None:
    """Raise :class:`SessionConfigError` if any limit setting is malformed."""
    _number(config, "deadline_s")
    _calls(config)
    _tokens(config)
    _rates(config)
    _concurrent(config)


def initial_runtime(config: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """``state.runtime`` of a new session: the deadline is fixed once, from its start."""
    check_config(config)
    seconds = _number(config, "deadline_s")
    if seconds is None:
        return {}
    return {"deadline_at": (now + timedelta(seconds=seconds)).isoformat(timespec="microseconds")}


def _deadline(state: SessionState) -> datetime | None:
    raw = state.runtime.get("deadline_at")
    return datetime.fromisoformat(str(raw)) if raw else None


def seconds_left(state: SessionState, now: datetime) -> float | None:
    """Seconds until the session's deadline (negative once passed); ``None`` if it has none."""
    deadline = _deadline(state)
    return None if deadline is None else (deadline - now).total_seconds()


def deadline_envelope(state: SessionState, now: datetime) -> Envelope | None:
    """A ``DEADLINE_EXCEEDED`` error once the session's deadline has passed, else ``None``."""
    deadline = _deadline(state)
    if deadline is None or now < deadline:
        return None
    return Envelope.error(
        "DEADLINE_EXCEEDED",
        f"session deadline {deadline.isoformat()} passed at {now.isoformat()} "
        f"(config.deadline_s = {state.config.get('deadline_s')})",
    )


def limit_envelope(calls: Sequence[ToolCall]) -> Envelope | None:
    """The first tool call refused for the session's deadline or budget, as an error."""
    for call in calls:
        if not call.ok and call.code in LIMIT_CODES:
            assert call.code is not None
            return Envelope.error(call.code, f"{call.id} ({call.tool}): {call.message}")
    return None


def next_runtime(previous: Mapping[str, Any], tools: object | None) -> dict[str, Any]:
    """``state.runtime`` after a step: the deadline kept, budget and buckets as spent."""
    out = dict(previous)
    runtime_state = getattr(tools, "runtime_state", None)
    if callable(runtime_state):
        spent = runtime_state()
        for key in ("budget", "limits"):
            if spent.get(key):
                out[key] = spent[key]
    return out


class SessionToolLimits(ToolLimits):
    """This session's rate buckets, with concurrency slots shared by the whole process.

    Buckets are per session and saved in the session; concurrency is about calls in
    flight right now, so it is counted across every session of the process.
    """

    def __init__(self, rate: Mapping[str, RateLimit], shared: ToolLimits) -> None:
        super().__init__(rate=rate)
        self.shared = shared

    def acquire(self, tool: str) -> bool:
        return self.shared.acquire(tool)

    def release(self, tool: str) -> None:
        self.shared.release(tool)

    def in_flight(self, tool: str) -> int:
        return self.shared.in_flight(tool)

    def slots(self, tool: str) -> int | None:
        return self.shared.slots(tool)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class SessionLimits(Record, frozen=True):
    """Engine-wide defaults for rate limits, plus the process-wide concurrency slots."""

    rate: Mapping[str, RateLimit]
    shared: ToolLimits

    def __init__(self, rate: Mapping[str, RateLimit], shared: ToolLimits) -> None:
        self._fill(rate=rate, shared=shared)

    @classmethod
    def build(
        cls,
        rate: Mapping[str, RateLimit] | None = None,
        concurrency: Mapping[str, int] | None = None,
    ) -> SessionLimits:
        """Validated limits (a bad one is a ``ToolDefinitionError`` naming the tool)."""
        ToolLimits(rate=rate)  # validates the rate limits
        return cls(rate=dict(rate or {}), shared=ToolLimits(concurrency=concurrency))

    def executor_kwargs(self, state: SessionState) -> dict[str, Any]:
        """``deadline``, ``budget`` and ``limits`` for this session's executor, loaded from
        its config and what it has spent so far."""
        rates = {**self.rate, **_rates(state.config)}
        limits = SessionToolLimits(rates, self.shared)
        limits.load(state.runtime.get("limits", {}))
        spent = state.runtime.get("budget", {})
        budget = BudgetTracker(max_calls=_calls(state.config), calls=int(spent.get("calls", 0)),
                               max_tokens=_tokens(state.config),
                               tokens=int(spent.get("tokens", 0)))
        return {"deadline": _deadline(state), "budget": budget, "limits": limits,
                "max_concurrent": _concurrent(state.config)}
