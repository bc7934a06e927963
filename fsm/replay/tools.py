"""What a replay runs with: the recorded clock, tools answered from the record, and the
tool runtime a header describes (for live replay and for recording fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

import orjson

from claimfsm.engine.driver import ToolSession, ToolsFactory
from claimfsm.engine.errors import BadInput
from claimfsm.engine.runtime import DEFAULT_FALLBACKS, ProfiledTools, executor_factory
from claimfsm.replay.record import Step
from claimfsm.skills.context import Clock, ToolCall
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.core import ToolError
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.model_chat import model_tool
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.model import SessionState

__all__ = ["CallSource", "RecordedTools", "ReplayClock", "Unrecorded", "runtime_from_info"]


class ReplayClock:
    """Returns the recorded reading of the step being replayed, however often it is read."""

    def __init__(self, ts: str) -> None:
        self.current = datetime.fromisoformat(ts)

    def now(self) -> datetime:
        return self.current

    def set(self, ts: str) -> None:
        """Move to a recorded reading (ISO text, as in the record)."""
        self.current = datetime.fromisoformat(ts)

    def advance(self, delta: timedelta) -> None:
        """Move forward (a diverged replay waiting out a retry beyond the record)."""
        self.current = self.current + delta


class Unrecorded:
    """A tool call the record does not hold (in order, or at all when lenient)."""

    def __init__(self, index: int, call: dict[str, Any], expected: ToolCall | None) -> None:
        self.index = index
        self.call = call
        self.expected = expected


def _norm(args: Mapping[str, Any]) -> dict[str, Any]:
    data = orjson.loads(orjson.dumps(dict(args)))
    return data if isinstance(data, dict) else {}


def _key(tool: str, args: Mapping[str, Any]) -> tuple[str, bytes]:
    return tool, orjson.dumps(args, option=orjson.OPT_SORT_KEYS)


class CallSource(Protocol):
    """Where a lenient replay finds recorded calls: every step's calls and tool events
    (a :class:`~claimfsm.replay.record.Record` or a :class:`~claimfsm.replay.source.
    RecordFile`)."""

    def calls(self) -> Iterator[tuple[list[ToolCall], list[dict[str, Any]] | None]]: ...


class RecordedTools:
    """A ``ToolsFactory`` whose sessions answer every call from the record.

    :meth:`load` sets the step being replayed: its calls are expected in order, matched
    on tool and args (a failed attempt and the fallback that followed it count as one
    call). Strict: anything else is an :class:`Unrecorded` call, answered with a failed
    ``UNRECORDED_TOOL_CALL`` result, never a real tool. Lenient (``tools`` mode, or after
    a divergence): a call out of order is answered by any recorded call with the same
    tool and args.

    The step's tool events are the recorded ones (format 2 records hold them, as they hold
    the results); a format 1 record has none, so each call gets a ``ToolInvoked`` event
    made from it.
    """

    def __init__(self, record: CallSource, *, lenient: bool = False) -> None:
        self.record = record
        self.lenient = lenient
        self.queue: list[ToolCall] = []
        self.policy: dict[str, Any] | None = None
        self.runtime: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] | None = None
        self.unrecorded: list[Unrecorded] = []
        self.made = 0
        self._pool: dict[tuple[str, bytes], list[ToolCall]] | None = None

    def load(self, step: Step | None) -> None:
        """Expect ``step``'s calls next (``None``: a step beyond the record)."""
        self.queue = list(step.calls) if step is not None else []
        self.policy = step.policy if step is not None else None
        self.runtime = step.runtime if step is not None else None
        self.events = step.events if step is not None else None
        self.unrecorded = []
        self.made = 0

    def __call__(self, state: SessionState, clock: Clock) -> ToolSession:
        return _Session(self, state)

    def lookup(self, tool: str, args: dict[str, Any]) -> list[ToolCall] | None:
        """Any recorded call of ``tool`` with ``args`` (with its fallback), or None."""
        if self._pool is None:
            pool: dict[tuple[str, bytes], list[ToolCall]] = {}
            for calls, _ in self.record.calls():
                for i, call in enumerate(calls):
                    if call.attempt == 1:
                        group = [call]
                        nxt = calls[i + 1] if i + 1 < len(calls) else None
                        if nxt is not None and nxt.id == call.id and nxt.attempt > 1:
                            group.append(nxt)
                        pool.setdefault(_key(call.tool, call.args), group)
            self._pool = pool
        return self._pool.get(_key(tool, args))


class _Session:
    """One step's tool caller (implements the driver's ``ToolSession``)."""

    def __init__(self, owner: RecordedTools, state: SessionState) -> None:
        self.owner = owner
        self.calls: list[ToolCall] = []
        recorded = owner.events
        self.events: list[dict[str, Any]] = [] if recorded is None else list(recorded)
        self._synthesize = recorded is None
        # What the recorded step committed (the driver stores it on ok): replaying tools
        # from the record replays their policy bookkeeping too.
        self.policy_state: dict[str, Any] = dict(
            state.policy if owner.policy is None else owner.policy)
        self._runtime = owner.runtime

    def runtime_state(self) -> dict[str, Any]:
        """The budget and rate buckets the recorded step left (the driver saves them)."""
        runtime = self._runtime or {}
        return {k: runtime[k] for k in ("budget", "limits") if k in runtime}

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall:
        owner = self.owner
        norm = _norm(args)
        queue = owner.queue
        group: list[ToolCall] | None = None
        if queue and queue[0].tool == tool and queue[0].args == norm:
            group = [queue.pop(0)]
            if not group[0].ok and queue and queue[0].id == group[0].id and queue[0].attempt > 1:
                group.append(queue.pop(0))
        elif owner.lenient:
            group = owner.lookup(tool, norm)
        owner.made += 1
        if group is None:
            owner.unrecorded.append(Unrecorded(owner.made - 1, {"tool": tool, "args": norm},
                                               queue[0] if queue else None))
            group = [ToolCall(id=call_id or f"u{owner.made}", tool=tool, args=norm, ok=False,
                              code="UNRECORDED_TOOL_CALL", key=key,
                              message=f"{tool}: the record holds no such call")]
        for c in group:
            self.calls.append(c)
            if self._synthesize:
                self.events.append({"type": "ToolInvoked", "tool": c.tool, "args": c.args,
                                    "ok": c.ok, "code": c.code, "duration_ms": 0,
                                    "attempt": c.attempt, "id": c.id})
        return group[-1]


def runtime_from_info(index: EvidenceIndex, info: Mapping[str, Any]) -> ToolsFactory:
    """The tool runtime a header's ``tools`` describes: built-in tools over ``index``,
    the engine's default rate limits and its fallbacks (a session's own limits come from
    its config, as in any run). Raises :class:`~claimfsm.engine.errors.BadInput` (a
    ``ValueError``) for a malformed description."""
    registry = ToolRegistry((*builtin_tools(index), model_tool()))
    try:
        rate = {str(tool): RateLimit(int(v["capacity"]), float(v["per_seconds"]))
                for tool, v in dict(info.get("limits") or {}).items()}
        fallbacks = {str(k): str(v) for k, v in
                     dict(info.get("fallbacks", DEFAULT_FALLBACKS)).items()}
        for src, dst in fallbacks.items():
            if dst not in registry or dst == src:
                raise BadInput(f"fallbacks.{src}: {dst!r} is not a usable tool",
                               field=f"fallbacks.{src}")
        # A hybrid session retrieves with embeddings in a live replay too (loaded once).
        return ProfiledTools(executor_factory(registry, fallbacks=fallbacks, rate_limits=rate),
                             index, None)
    except (KeyError, TypeError, ValueError, AttributeError, ToolError) as exc:
        raise BadInput(f"tools: malformed runtime description ({exc})", field="tools") from None
