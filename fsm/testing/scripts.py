"""Scripted stand-ins for tests: skills that answer with given envelopes, tools that
answer with given results, and drivers wired from them (re-exported by
:mod:`claimfsm.testing.toolkit`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.driver import Driver, StepResult, ToolsFactory
from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef
from claimfsm.skills.base import Skill, StRef
from claimfsm.skills.context import Clock, FixedClock, SkillContext, ToolCall
from claimfsm.skills.envelope import Envelope, Rollback
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore
from claimfsm.testing.paths import Path

__all__ = [
    "AnyInput",
    "Script",
    "ScriptedTools",
    "ToolFailure",
    "drive_path",
    "fail",
    "goto",
    "retry",
    "scripted_bindings",
    "scripted_driver",
    "scripted_skill",
]

#: One scripted answer: an envelope, or a function of the input's ``st`` returning one.
Script = Envelope | Callable[[dict[str, Any]], Envelope]


def goto(fsm: str, **data: Any) -> Callable[[dict[str, Any]], Envelope]:
    """An ``ok`` answer moving to ``fsm`` with ``data`` in ``d`` (``sp.rev`` = head+1)."""
    return lambda st: Envelope.ok(data, rev=st["rev"] + 1, fsm=fsm)


def fail(code: str, *, rb: Rollback = "none", msg: str | None = None) -> Envelope:
    """An ``error`` answer."""
    return Envelope.error(code, msg or f"{code} (scripted)", rb=rb)


def retry(code: str, msg: str | None = None) -> Envelope:
    """A ``retry`` answer."""
    return Envelope.retry(code, msg or f"{code} (scripted)")


class AnyInput(BaseModel):
    """Accepts whatever a binding builds; only ``st`` is required."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="allow")

    st: StRef


class _NoOutput(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="allow")


def scripted_skill(
    name: str, script: Iterable[Script] | Script, *, rb_on_error: Rollback = "none"
) -> Skill[AnyInput, _NoOutput]:
    """A skill answering with the scripted envelopes in turn (a single one: every time).

    Past the end of a list it answers ``SCRIPT_EXHAUSTED`` (an error envelope).
    """
    single = isinstance(script, Envelope) or callable(script)
    queue: Iterator[Script] = iter(() if single else script)  # type: ignore[arg-type]

    def handler(inp: AnyInput, ctx: SkillContext) -> Envelope:
        item: Script | None = script if single else next(queue, None)  # type: ignore[assignment]
        if item is None:
            return Envelope.error("SCRIPT_EXHAUSTED", f"{name}: no scripted answer left")
        return item if isinstance(item, Envelope) else item(inp.st.model_dump())

    return Skill(name=name, input_model=AnyInput, output_model=_NoOutput, handler=handler,
                 rb_on_error=rb_on_error, description=f"scripted {name}")


def scripted_bindings(
    machine: MachineDef, scripts: Mapping[str, Iterable[Script] | Script]
) -> dict[str, Binding]:
    """Generic bindings (``d`` merges into ``memory``) whose skills follow ``scripts``,
    keyed by state name or skill name."""
    out: dict[str, Binding] = {}
    for spec in machine.states:
        if spec.skill is None:
            continue
        script = scripts.get(spec.name, scripts.get(spec.skill, []))
        out[spec.skill] = memory_binding(scripted_skill(spec.skill, script))
    return out


def scripted_driver(
    machine: MachineDef = DEFAULT_MACHINE,
    scripts: Mapping[str, Iterable[Script] | Script] | None = None,
    *,
    bindings: Mapping[str, Binding] | None = None,
    store: StateStore | None = None,
    clock: FixedClock | None = None,
    tools: ToolsFactory | None = None,
    on_step: Callable[[StepResult], None] | None = None,
) -> Driver:
    """A driver over ``machine`` with scripted skills, a memory store and a fixed clock.

    Session ids are ``S1, S2, ...``; waiting for a retry advances the clock instead of
    sleeping.
    """
    fixed = clock or FixedClock()
    counter = iter(range(1, 1 << 30))
    return Driver(store or MemoryStore(), machine=machine,
                  bindings=bindings or scripted_bindings(machine, scripts or {}), tools=tools,
                  clock=fixed, new_sid=lambda: f"S{next(counter)}",
                  sleep=lambda s: fixed.advance(timedelta(seconds=s)), on_step=on_step)


#: A reviewer's input for each move out of the claim machine's REVIEW.
REVIEW_INPUTS: Mapping[tuple[str, str], Any] = {
    ("REVIEW", "DONE"): {"decision": "approve"},
    ("REVIEW", "RETRIEVAL"): {"decision": "send_back", "queries": ["more"], "reason": "thin"},
}


def drive_path(path: Path, machine: MachineDef = DEFAULT_MACHINE, *,
               claim: str = "a claim",
               inputs: Mapping[tuple[str, str], Any] = REVIEW_INPUTS) -> Revision:
    """Walk ``path`` with scripted ``ok`` envelopes (one per transition; a move out of a
    wait state is the input ``inputs[(src, dst)]``) and return the head revision the
    session ends at."""
    scripts: dict[str, list[Script]] = {}
    for src, dst in path.edges:
        if src not in machine.waits:
            scripts.setdefault(src, []).append(goto(dst))
    driver = scripted_driver(machine, scripts)
    sid = driver.start(claim).sid
    for edge in path.edges:
        if edge[0] in machine.waits:
            driver.input(sid, inputs[edge], actor="drive_path")
        else:
            driver.step(sid)
    return driver.store.head(sid)


class ToolFailure:
    """A scripted failed tool result: ``ScriptedTools({"search": ToolFailure("RATE_LIMITED")})``."""

    def __init__(self, code: str, message: str = "") -> None:
        self.code = code
        self.message = message or f"{code} (scripted)"


Answer = Mapping[str, Any] | ToolFailure | ToolCall
ToolScript = Answer | list[Answer] | Callable[[dict[str, Any]], Answer]


class ScriptedTools:
    """A tool caller answering from a script instead of running tools.

    ``responses`` maps a tool name to a value (every call), a list (one per call, in
    order), or a function of the args. Values are result dicts, :class:`ToolFailure` or
    whole ``ToolCall`` objects. Unscripted calls fail with ``UNSCRIPTED_TOOL_CALL``.
    ``calls`` holds the current step's calls, ``history`` every call. Pass the object as a
    skill's ``tools``, or as a driver's tools factory (each step starts a new ``calls``).
    """

    def __init__(self, responses: Mapping[str, ToolScript] | None = None) -> None:
        self.responses: dict[str, ToolScript] = {
            k: list(v) if isinstance(v, list) else v for k, v in (responses or {}).items()
        }
        self.calls: list[ToolCall] = []
        self.events: list[dict[str, Any]] = []
        self.policy_state: dict[str, Any] = {}
        self.history: list[ToolCall] = []
        self._n = 0

    def __call__(self, state: SessionState, clock: Clock) -> ScriptedTools:
        self.calls, self.events, self.policy_state = [], [], dict(state.policy)
        return self

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall:
        self._n += 1
        cid = call_id or f"t{self._n}"
        answer = self._answer(tool, dict(args))
        if isinstance(answer, ToolCall):
            call = answer
        elif isinstance(answer, ToolFailure):
            call = ToolCall(id=cid, tool=tool, args=dict(args), ok=False, code=answer.code,
                            message=answer.message, key=key)
        else:
            call = ToolCall(id=cid, tool=tool, args=dict(args), ok=True, value=dict(answer),
                            key=key)
        self.calls.append(call)
        self.history.append(call)
        self.events.append({"type": "ToolInvoked", "tool": tool, "ok": call.ok,
                            "code": call.code, "id": call.id})
        return call

    def _answer(self, tool: str, args: dict[str, Any]) -> Answer:
        script = self.responses.get(tool)
        if isinstance(script, list):
            if script:
                return script.pop(0)
            return ToolFailure("UNSCRIPTED_TOOL_CALL", f"{tool}: no scripted answer left")
        if script is None:
            return ToolFailure("UNSCRIPTED_TOOL_CALL", f"{tool}: not scripted")
        if callable(script):
            return script(args)
        return script
