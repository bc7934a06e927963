"""Where a claim's milliseconds go: the eval run's split by state (its skill) and by tool.

:class:`StepTimer` is a step observer (:class:`claimfsm.engine.observer.StepObserver`)
that ``evaluate`` puts in front of the driver's own for the timed sessions: each step's
wall and CPU time is added to its state, and each tool call's time (the executor's
``TOOL_HOOK``) to its tool. Watching changes nothing a session computes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import Field

from claimfsm._base.models import Frozen
from claimfsm._base.observe import TOOL_HOOK
from claimfsm.engine.observer import StepObserver
from claimfsm.engine.step import StepResult
from claimfsm.state.model import Revision

__all__ = ["StateTime", "StepSplit", "StepTimer", "ToolTime"]

_PLACES = 3


class StateTime(Frozen):
    """The steps run in one state: how many, and their summed wall and CPU seconds."""

    skill: str | None
    steps: int
    seconds: float
    cpu_seconds: float


class ToolTime(Frozen):
    """The calls of one tool (every attempt): how many, and their summed wall seconds."""

    calls: int
    seconds: float


class StepSplit(Frozen):
    """The timed sessions' time by state and by tool, and the time outside any step
    (starting sessions, reading heads, the eval's own bookkeeping)."""

    states: dict[str, StateTime] = Field(default_factory=dict)
    tools: dict[str, ToolTime] = Field(default_factory=dict)
    outside_seconds: float = 0.0
    outside_cpu_seconds: float = 0.0

    def to_json(self, claims: int) -> dict[str, Any]:
        """Milliseconds per claim: ``{"states": {state: {"skill", "steps", "ms_per_claim",
        "cpu_ms_per_claim"}}, "tools": {tool: {"calls", "ms_per_claim"}},
        "outside_steps": {"ms_per_claim", "cpu_ms_per_claim"}}``. Tool time is part of its
        state's time."""
        per = 1000.0 / claims if claims else 0.0
        return {
            "states": {name: {"skill": s.skill, "steps": s.steps,
                              "ms_per_claim": round(s.seconds * per, _PLACES),
                              "cpu_ms_per_claim": round(s.cpu_seconds * per, _PLACES)}
                       for name, s in self.states.items()},
            "tools": {name: {"calls": t.calls, "ms_per_claim": round(t.seconds * per, _PLACES)}
                      for name, t in sorted(self.tools.items())},
            "outside_steps": {"ms_per_claim": round(self.outside_seconds * per, _PLACES),
                              "cpu_ms_per_claim": round(self.outside_cpu_seconds * per,
                                                        _PLACES)},
        }


class StepTimer:
    """Times every step by the state it ran in, and every tool call by tool; wraps
    ``inner`` (the driver's observer, if any), which still sees every step."""

    def __init__(self, inner: StepObserver | None = None) -> None:
        self.inner = inner
        self._states: dict[str, list[Any]] = {}
        self._tools: dict[str, list[Any]] = {}

    def step(self, head: Revision, fire: Callable[[Revision], StepResult]) -> StepResult:
        """Run ``fire(head)`` (through ``inner``), timed."""
        wall, cpu = time.perf_counter(), time.process_time()
        result = (self.inner.step(head, self._watched(fire)) if self.inner is not None
                  else self._watched(fire)(head))
        row = self._states.setdefault(head.fsm, [result.skill, 0, 0.0, 0.0])
        row[0] = row[0] or result.skill
        row[1] += 1
        row[2] += time.perf_counter() - wall
        row[3] += time.process_time() - cpu
        return result

    def _watched(self, fire: Callable[[Revision], StepResult]) -> Callable[[Revision], StepResult]:
        def run(head: Revision) -> StepResult:
            outer = TOOL_HOOK.get()  # the inner observer's hook, when it watches tools

            def hook(event: dict[str, Any], seconds: float) -> None:
                row = self._tools.setdefault(str(event.get("tool", "")), [0, 0.0])
                row[0] += 1
                row[1] += seconds
                if outer is not None:
                    outer(event, seconds)

            token = TOOL_HOOK.set(hook)
            try:
                return fire(head)
            finally:
                TOOL_HOOK.reset(token)

        return run

    def split(self, total_seconds: float, total_cpu_seconds: float) -> StepSplit:
        """What was timed so far, given the sessions' whole wall and CPU time."""
        states = {name: StateTime(skill=r[0], steps=r[1], seconds=r[2], cpu_seconds=r[3])
                  for name, r in self._states.items()}
        return StepSplit(
            states=states,
            tools={name: ToolTime(calls=r[0], seconds=r[1]) for name, r in self._tools.items()},
            outside_seconds=max(0.0, total_seconds - sum(s.seconds for s in states.values())),
            outside_cpu_seconds=max(0.0, total_cpu_seconds
                                    - sum(s.cpu_seconds for s in states.values())),
        )
