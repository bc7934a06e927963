"""The checks a tool call passes around its handler: before it, the registry, the
arguments, every policy (fail-closed), the deadline, the budget and the rate limit; after
it, every policy's ``on_result``, committed copy-on-write.

Its own module because these are the rules a call is held to, apart from running it:
:class:`CallChecks` is the half of :class:`~.executor.Executor` (its base class) that
holds them, and reads the registry, policies, limits and lock the executor sets.
"""

from __future__ import annotations

import threading
from datetime import datetime
from types import MappingProxyType
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from claimfsm.skills.base import describe_validation_error
from claimfsm.skills.tools.core import BudgetTracker, Tool
from claimfsm.skills.tools.limits import ToolLimits
from claimfsm.skills.tools.outcome import _Failure
from claimfsm.skills.tools.policies import ToolPolicy, empty_policy_state
from claimfsm.skills.tools.policies import copy_state as _state_copy
from claimfsm.skills.tools.registry import ToolRegistry

__all__ = ["CallChecks"]


class CallChecks:
    """The admission and policy checks of :class:`~.executor.Executor`."""

    registry: ToolRegistry
    policies: tuple[ToolPolicy, ...]
    policy_state: dict[str, Any]
    deadline: datetime | None
    budget: BudgetTracker | None
    limits: ToolLimits | None
    _lock: threading.RLock

    def _deadline(self) -> datetime | None:
        candidates = [d for d in (self.deadline, self.budget and self.budget.deadline) if d]
        return min(candidates) if candidates else None

    def _admit(
        self, name: str, args: dict[str, Any], start: datetime
    ) -> tuple[Tool[Any, Any], BaseModel, datetime | None]:
        """Every check before the handler but the concurrency slot and the budget."""
        tool = self.registry.get(name)
        if tool is None:
            known = ", ".join(self.registry.names()) or "(none)"
            raise _Failure("UNKNOWN_TOOL", f"unknown tool {name!r}; known tools: {known}")
        try:
            params = tool.params.model_validate(args)
        except ValidationError as exc:
            raise _Failure("BAD_ARGS", describe_validation_error(exc)) from None
        self._check_policies(tool, params)
        deadline = self._deadline()
        if deadline is not None and start >= deadline:
            raise _Failure(
                "DEADLINE_EXCEEDED", f"{name}: deadline {deadline.isoformat()} has passed"
            )
        if self.budget is not None and self.budget.exhausted():
            raise _Failure(
                "BUDGET_EXCEEDED", f"{name}: tool-call budget of {self.budget.max_calls} spent"
            )
        limits = self.limits
        if limits is not None and not limits.take(name, start):
            raise _Failure("RATE_LIMITED", f"{name}: rate limit reached")
        return tool, params, deadline

    def _consume(self, name: str) -> None:
        if self.budget is not None and not self.budget.try_consume():
            raise _Failure(
                "BUDGET_EXCEEDED", f"{name}: tool-call budget of {self.budget.max_calls} spent"
            )

    def _check_policies(self, tool: Tool[Any, Any], params: BaseModel) -> None:
        with self._lock:
            state = self._policy_copy()
        for policy in self.policies:
            own = MappingProxyType(state.get(policy.name, empty_policy_state()))
            try:
                decision = policy.check(tool, params, state=own)
            except Exception as exc:  # a broken policy denies: fail-closed
                raise _Failure(
                    "POLICY_DENIED", f"policy {policy.name} failed: {type(exc).__name__}: {exc}"
                ) from None
            if not decision.allowed:
                raise _Failure("POLICY_DENIED", decision.reason or f"denied by {policy.name}")

    def _commit_policies(self, tool: Tool[Any, Any], params: BaseModel, value: BaseModel) -> None:
        # Copy-on-write, committed in one assignment: a policy that raises half-way leaves
        # the state exactly as it was before the call (the snapshot).
        with self._lock:
            # Slices are replaced, never edited in place, so a shallow copy is the snapshot.
            new_state = dict(self.policy_state)
            current = self._policy_copy()
            for policy in self.policies:
                own = MappingProxyType(current.get(policy.name, empty_policy_state()))
                try:
                    updated = policy.on_result(tool, params, value, state=own)
                    new_state[policy.name] = orjson.loads(orjson.dumps(updated))
                except Exception as exc:
                    raise _Failure(
                        "TOOL_ERROR",
                        f"policy {policy.name} on_result failed: {type(exc).__name__}: {exc}",
                    ) from None
            self.policy_state = new_state

    def _policy_copy(self) -> dict[str, Any]:
        """A private copy of ``policy_state`` (a policy or tool may keep or edit it)."""
        return _state_copy(self.policy_state)
