"""The eval's step timer: steps by state, tool calls by tool, and the driver's own
observer still seeing every step and tool call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claimfsm._base.observe import TOOL_HOOK
from claimfsm.engine.step import StepResult
from claimfsm.eval.timing import StepTimer
from claimfsm.skills.envelope import Envelope
from claimfsm.state.model import Revision


class _Inner:
    def __init__(self) -> None:
        self.steps = 0
        self.tools: list[str] = []

    def step(self, head: Revision, fire: Callable[[Revision], StepResult]) -> StepResult:
        self.steps += 1
        token = TOOL_HOOK.set(lambda event, seconds: self.tools.append(event["tool"]))
        try:
            return fire(head)
        finally:
            TOOL_HOOK.reset(token)


class _Head:
    def __init__(self, fsm: str) -> None:
        self.fsm = fsm


def _fire(tools: list[str]) -> Callable[[Any], StepResult]:
    def fire(head: Any) -> StepResult:
        hook = TOOL_HOOK.get()
        assert hook is not None
        for name in tools:
            hook({"tool": name}, 0.25)
        env = Envelope.ok({}, rev=0, fsm=head.fsm)
        return StepResult("s", head.fsm, head.fsm, head.fsm.lower(), env, None)

    return fire


def test_steps_and_tool_calls_are_counted_and_passed_on() -> None:
    inner = _Inner()
    timer = StepTimer(inner)
    timer.step(_Head("RETRIEVAL"), _fire(["search", "search"]))  # type: ignore[arg-type]
    timer.step(_Head("RETRIEVAL"), _fire([]))  # type: ignore[arg-type]
    timer.step(_Head("EXTRACT"), _fire(["page_fetch"]))  # type: ignore[arg-type]
    assert inner.steps == 3 and inner.tools == ["search", "search", "page_fetch"]
    split = timer.split(10.0, 1.0)
    assert {k: (v.skill, v.steps) for k, v in split.states.items()} == {
        "RETRIEVAL": ("retrieval", 2), "EXTRACT": ("extract", 1)}
    assert {k: (v.calls, v.seconds) for k, v in split.tools.items()} == {
        "search": (2, 0.5), "page_fetch": (1, 0.25)}
    body = split.to_json(claims=2)
    assert body["tools"]["search"] == {"calls": 2, "ms_per_claim": 250.0}
    assert 0 < body["outside_steps"]["ms_per_claim"] <= 5000.0
    assert TOOL_HOOK.get() is None


def test_without_an_inner_observer_the_hook_is_set_for_the_step_only() -> None:
    timer = StepTimer()
    timer.step(_Head("VERIFY"), _fire(["rank"]))  # type: ignore[arg-type]
    assert TOOL_HOOK.get() is None
    assert timer.split(1.0, 1.0).tools["rank"].calls == 1
