"""The executor: runs one tool call through the whole dispatch pipeline, never raising.

Order for each call: registry lookup, argument parsing (extra fields refused), policy
checks (all must allow; fail-closed), deadline, tool-call budget, rate limit, concurrency
limit, context construction, snapshot of resources, handler, result validation, policy
``on_result``, restore on failure, telemetry, return. Every outcome is a ``ToolCall``;
durations come from the injected clock, so a replay records the same events. The checks
around the handler are the executor's base class (:class:`~.checks.CallChecks`), its
failures :mod:`.outcome`'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

import orjson
from pydantic import BaseModel

from claimfsm._base.observe import TOOL_HOOK
from claimfsm.skills.context import Clock, IdSource, ToolCall
from claimfsm.skills.limits import MAX_TOOL_RESULT_BYTES
from claimfsm.skills.tools.checks import CallChecks
from claimfsm.skills.tools.core import BudgetTracker, Tool, ToolContext, ToolDefinitionError
from claimfsm.skills.tools.gather import CallRequest, gather, restorable
from claimfsm.skills.tools.limits import ToolLimits
from claimfsm.skills.tools.outcome import _exception_failure, _Failure, _validated
from claimfsm.skills.tools.policies import ToolPolicy
from claimfsm.skills.tools.policies import copy_state as _state_copy
from claimfsm.skills.tools.registry import ToolRegistry

__all__ = ["DEFAULT_FALLBACK_CODES", "Executor"]

DEFAULT_FALLBACK_CODES: frozenset[str] = frozenset({"RATE_LIMITED"})
_MS = timedelta(milliseconds=1)


def _json_copy(args: Mapping[str, Any]) -> dict[str, Any]:
    # Parsing the JSON round-trip (not the caller's objects) means a replay of the
    # recorded args parses to exactly the same params.
    data = orjson.loads(orjson.dumps(dict(args)))
    if not isinstance(data, dict):
        raise TypeError("args must be a JSON object")
    return data


class Executor(CallChecks):
    """Runs tool calls for skills (implements ``claimfsm.skills.context.ToolCaller``).

    ``calls`` holds every attempt in order, ``events`` the ``ToolInvoked`` telemetry, and
    ``policy_state`` the JSON-able policy state (keyed by policy name) the driver stores
    in the session's ``policy`` slice.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        clock: Clock,
        ids: IdSource | None = None,
        session_id: str = "",
        policies: Sequence[ToolPolicy] = (),
        policy_state: Mapping[str, Any] | None = None,
        deadline: datetime | None = None,
        budget: BudgetTracker | None = None,
        limits: ToolLimits | None = None,
        fallbacks: Mapping[str, str] | None = None,
        resources: Mapping[str, Any] | None = None,
        fallback_codes: frozenset[str] = DEFAULT_FALLBACK_CODES,
        max_concurrent: int = 1,
    ) -> None:
        self.registry = registry
        self.clock = clock
        self.ids = ids
        self.session_id = session_id
        self.policies: tuple[ToolPolicy, ...] = tuple(policies)
        names = [p.name for p in self.policies]
        for name in names:
            if names.count(name) > 1:
                raise ToolDefinitionError(name, "duplicate policy name")
        self.policy_state: dict[str, Any] = _state_copy(dict(policy_state or {}))
        self.deadline = deadline
        self.budget = budget
        self.limits = limits
        self.fallbacks: dict[str, str] = dict(fallbacks or {})
        for source, target in self.fallbacks.items():
            if target not in registry or target == source:
                raise ToolDefinitionError(source, f"fallback {target!r} is not a usable tool")
        self.fallback_codes = fallback_codes
        self.resources: Mapping[str, Any] = MappingProxyType(dict(resources or {}))
        #: Calls :meth:`gather` runs at once (1: one by one).
        self.max_concurrent = max_concurrent
        self.calls: list[ToolCall] = []
        self.events: list[dict[str, Any]] = []
        self._lock = threading.RLock()
        self._counter = 0

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall:
        """Run ``tool`` with ``args``; a failed call (never an exception) on any problem.

        When the call fails with a code in ``fallback_codes`` and ``tool`` has a fallback,
        the same args (only those the fallback accepts) go to the fallback as attempt 2,
        under the same id; the fallback's call is returned.
        """
        cid = call_id if call_id is not None else self._next_id()
        first = self._attempt(tool, args, cid, key, attempt=1)
        target = self.fallbacks.get(tool)
        if first.ok or target is None or first.code not in self.fallback_codes:
            return first
        fallback = self.registry.get(target)
        accepted = set(fallback.params.model_fields) if fallback is not None else set()
        fb_args = {k: v for k, v in first.args.items() if k in accepted}
        return self._attempt(target, fb_args, cid, key, attempt=2)

    def gather(
        self, requests: Sequence[CallRequest], *, scope: str | None = None
    ) -> list[ToolCall | None]:
        """Run independent calls, :attr:`max_concurrent` at a time, recorded in the order
        given whatever order they finish in (:mod:`claimfsm.skills.tools.gather`); each
        request's final call, or ``None`` for one not made after a rate limit refused an
        earlier one. ``scope`` (the step's head revision) keys the answers saved as they
        arrive, when the ``answers`` resource is given."""
        return gather(self, requests, self.max_concurrent, scope)

    def runtime_state(self) -> dict[str, Any]:
        """Everything replayable the runtime holds: policy, rate buckets, budget (JSON)."""
        with self._lock:
            return {
                "policy": self._policy_copy(),
                "limits": self.limits.state() if self.limits is not None else {},
                "budget": self.budget.state() if self.budget is not None else {},
            }

    def _next_id(self) -> str:
        with self._lock:
            if self.ids is not None:
                return self.ids.next("t")
            self._counter += 1
            return f"t{self._counter}"

    def _attempt(
        self, name: str, args: Mapping[str, Any], cid: str, key: str | None, *, attempt: int
    ) -> ToolCall:
        hook = TOOL_HOOK.get()  # traces and metrics (claimfsm.observe), when watched
        began = time.perf_counter() if hook is not None else 0.0
        start = self.clock.now()
        value: dict[str, Any] | None = None
        failure: _Failure | None = None
        try:
            recorded = _json_copy(args)
        except (TypeError, orjson.JSONEncodeError) as exc:
            recorded, failure = {}, _Failure("BAD_ARGS", f"(root): args are not JSON ({exc})")
        else:
            try:
                value = self._run(name, recorded, start)
            except _Failure as exc:
                failure = exc
        return self._record(name, recorded, cid, key, attempt, start, value, failure, began)

    def _record(
        self, name: str, recorded: dict[str, Any], cid: str, key: str | None, attempt: int,
        start: datetime, value: dict[str, Any] | None, failure: _Failure | None,
        began: float, *, end: datetime | None = None,
    ) -> ToolCall:
        """The call and its event, appended (its end is read here unless given)."""
        end = self.clock.now() if end is None else end
        call = ToolCall(
            id=cid, tool=name, args=recorded, ok=failure is None,
            value=value if failure is None else failure.value,
            message="" if failure is None else failure.message,
            code=None if failure is None else failure.code,
            attempt=attempt, key=key,
        )
        event = {
            "type": "ToolInvoked", "tool": name, "args": _json_copy(recorded), "ok": call.ok,
            "code": call.code, "duration_ms": (end - start) // _MS, "attempt": attempt,
            "id": cid,
        }
        tool = self.registry.get(name)
        if tool is not None and tool.telemetry is not None:
            try:
                event.update(tool.telemetry(recorded, call.value))
            except Exception as exc:  # telemetry never fails a call that ran
                event["telemetry_error"] = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self.calls.append(call)
            self.events.append(event)
        hook = TOOL_HOOK.get()
        if hook is not None:
            hook(event, time.perf_counter() - began)
        return call

    def _run(self, name: str, args: dict[str, Any], start: datetime) -> dict[str, Any]:
        """The pipeline; returns the JSON value or raises :class:`_Failure`."""
        tool, params, deadline = self._admit(name, args, start)
        limits = self.limits
        if limits is not None and not limits.acquire(name):
            raise _Failure("CONCURRENCY_LIMITED", f"{name}: concurrency limit reached")
        try:
            self._consume(name)
            return self._execute(tool, params, deadline)
        finally:
            if limits is not None:
                limits.release(name)

    def _execute(
        self, tool: Tool[Any, Any], params: BaseModel, deadline: datetime | None
    ) -> dict[str, Any]:
        snaps: dict[str, Any] = {}
        try:
            for rname, resource in self.resources.items():
                if restorable(resource):
                    snaps[rname] = resource.snapshot()
            value, dumped = self._handle(tool, params, deadline)
            self._commit_policies(tool, params, value)
            return dumped
        except Exception as exc:
            failure = exc if isinstance(exc, _Failure) else _exception_failure(tool.name, exc)
            self._restore(snaps, failure)
            raise failure from None

    def _handle(
        self, tool: Tool[Any, Any], params: BaseModel, deadline: datetime | None
    ) -> tuple[BaseModel, dict[str, Any]]:
        """The handler and its result checked: what may run beside other calls."""
        with self._lock:
            policy_view = self._policy_copy()
        context = ToolContext(
            clock=self.clock, deadline=deadline, budget=self.budget,
            session=MappingProxyType({"sid": self.session_id, "policy": policy_view}),
            resources=self.resources, tool=tool.name,
        )
        result = tool.handler(params, context=context)
        value = _validated(tool, result)
        dumped: dict[str, Any] = value.model_dump(mode="json")
        size = len(orjson.dumps(dumped))
        if size > MAX_TOOL_RESULT_BYTES:
            # Checked before the policies see the call: a refused result changes nothing.
            raise _Failure("INPUT_TOO_LARGE", f"{tool.name}: result of {size} bytes, the "
                           f"limit is {MAX_TOOL_RESULT_BYTES}")
        return value, dumped

    def _restore(self, snaps: Mapping[str, Any], failure: _Failure) -> None:
        for rname, snap in snaps.items():
            try:
                self.resources[rname].restore(snap)
            except Exception as exc:  # report, but keep the original failure's code
                failure.message += f"; restoring {rname} failed: {type(exc).__name__}: {exc}"
