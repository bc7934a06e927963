"""A small machine and its scripted skills for the tests that kill mutants of the driver
and of replay (tests/engine/test_driver_*mutants.py, tests/replay/test_replay_*mutants.py):
drivers over it, and records of its sessions recorded as ``--record`` writes them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from claimfsm.engine.bindings import Binding, memory_binding
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec
from claimfsm.replay.record import End, Record, Step
from claimfsm.replay.runner import Divergence
from claimfsm.replay.write import header_for, step_from_result, tools_info
from claimfsm.skills.base import Skill
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState
from claimfsm.testing import ScriptedTools, goto, scripted_driver, scripted_skill
from claimfsm.testing.scripts import AnyInput, Script

T0 = datetime(2026, 1, 1, tzinfo=UTC)
FLAKY = frozenset({"FLAKY"})
#: What a skill does: its answer from the input's ``st`` and the step's context.
Behaviour = Callable[[dict[str, Any], SkillContext], Envelope]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


def handled(name: str, handler: Callable[[Any, SkillContext], Envelope]) -> Skill[Any, Any]:
    """A skill of any input running ``handler``."""
    return Skill(name=name, input_model=AnyInput, output_model=_Out, handler=handler,
                 rb_on_error="none", description=name)


def walk(*, check_final: bool = False, retried: frozenset[str] = FLAKY,
         backoff: float = 2.0) -> MachineDef:
    """WORK loops, moves to CHECK, CHECK to DONE; FLAKY errors in WORK are retried (three
    attempts, ``backoff`` seconds before the second). ``check_final``: a changed machine
    of the same name in which CHECK ends the session."""
    retry = RetryPolicy(codes=retried, max_attempts=3, backoff_s=backoff)
    if check_final:
        return MachineDef(name="walk", states=(
            StateSpec("WORK", skill="work", retry=retry), StateSpec("CHECK", final=True),
            StateSpec("FAILED", final=True)),
            transitions=(("WORK", "WORK"), ("WORK", "CHECK"), ("WORK", "FAILED")),
            initial="WORK", failure="FAILED")
    return MachineDef(name="walk", states=(
        StateSpec("WORK", skill="work", retry=retry), StateSpec("CHECK", skill="check"),
        StateSpec("DONE", final=True), StateSpec("FAILED", final=True)),
        transitions=(("WORK", "WORK"), ("WORK", "CHECK"), ("WORK", "FAILED"),
                     ("CHECK", "WORK"), ("CHECK", "DONE"), ("CHECK", "FAILED")),
        initial="WORK", failure="FAILED")


# -- drivers ---------------------------------------------------------------------------


TO_DONE = goto("DONE")


def driver(work: Script | list[Script], check: Script | list[Script] = TO_DONE, *,
           machine: MachineDef | None = None, clock: FixedClock | None = None,
           store: MemoryStore | None = None, tools: Any = None, sleeps: list[float] | None = None,
           seen: list[StepResult] | None = None,
           bindings: Mapping[str, Binding] | None = None) -> Driver:
    """A driver of ``machine`` whose skills answer from scripts; ``sleeps`` collects the
    waits ``run`` asks for (the clock moves by them)."""
    fixed = clock or FixedClock(current=T0)

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        fixed.advance(timedelta(seconds=seconds))

    return Driver(store or MemoryStore(), machine=machine or walk(), bindings=bindings or {
        "work": memory_binding(scripted_skill("work", work)),
        "check": memory_binding(scripted_skill("check", check))},
        tools=tools, clock=fixed, new_sid=lambda: "S1", sleep=sleep,
        on_step=None if seen is None else seen.append)


def as_validated(state: SessionState) -> SessionState:
    return SessionState.model_validate(state.model_dump())


def check_revision(rev: Revision) -> None:
    """What every committed revision holds: the state validation would build (no field
    missing, none extra), stamped with the revision's FSM state."""
    assert set(vars(rev.state)) == set(SessionState.model_fields)
    assert as_validated(rev.state) == rev.state and rev.state.fsm == rev.fsm


def history(d: Driver) -> list[Revision]:
    revisions = list(d.store.history("S1"))
    for rev in revisions:
        check_revision(rev)
    return revisions


def refused(result: StepResult, skill: str | None, code: str, msg: str) -> None:
    assert (result.sid, result.before, result.after, result.skill) == ("S1", "WORK", "WORK",
                                                                      skill)
    assert result.revision is None and result.ts == "2026-01-01T00:00:00.000000+00:00"
    assert result.envelope.e is not None and result.envelope.s != "ok"
    assert (result.envelope.e.code, result.envelope.e.msg) == (code, msg)


# -- records ---------------------------------------------------------------------------


def binding(name: str, behave: Behaviour, *, extra: dict[str, Any] | None = None,
            label: str | None = None) -> Binding:
    """``d`` merges into memory; ``extra`` joins the input; ``label`` becomes the verdict
    when ``d`` says ``final``."""
    skill = handled(name, lambda inp, ctx: behave(inp.st.model_dump(), ctx))

    def to_input(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        return {"memory": dict(state.memory), "st": st, **(extra or {})}

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        update: dict[str, Any] = {"memory": {**state.memory, **d}}
        if d.get("final"):
            update["verdict"] = {"label": label}
        return state.model_copy(update=update)

    return Binding(skill, to_input, apply)


def loops(times: int, **data: Any) -> Behaviour:
    """WORK: loop until revision ``times``, then move to CHECK."""
    return lambda st, ctx: Envelope.ok(data, rev=st["rev"] + 1,
                                       fsm="WORK" if st["rev"] + 1 < times else "CHECK")


def done(st: dict[str, Any], ctx: SkillContext) -> Envelope:
    return Envelope.ok({"final": True}, rev=st["rev"] + 1, fsm="DONE")


def bindings(work: Behaviour, check: Behaviour = done, **kw: Any) -> dict[str, Binding]:
    return {"work": binding("work", work, **kw), "check": binding("check", check, **kw)}


def record(work: Behaviour, *, check: Behaviour = done, tools: ScriptedTools | None = None,
           steps: int = 20, **kw: Any) -> Record:
    """The record of one session run with these skills (``--record`` writes the same)."""
    lines: list[Step] = []
    head = [0]

    def keep(result: StepResult) -> None:
        lines.append(step_from_result(result, head[0]))
        if result.revision is not None:
            head[0] = result.revision.rev

    recorder = scripted_driver(walk(), bindings=bindings(work, check, **kw), tools=tools,
                               on_step=keep)
    first = recorder.start("a claim")
    last = recorder.run(first.sid, max_steps=steps)
    info = None if tools is None else tools_info(documents=0, facts=0)
    end = End(rev=last.rev, fsm=last.fsm, verdict=(last.state.verdict or {}).get("label")
              ) if last.fsm in ("DONE", "FAILED") else None
    return Record(header=header_for(first, info, "walk"), entries=tuple(lines), end=end,
                  source="walk.jsonl")


def div(step: int, state: str, skill: str | None, kind: str, path: str, expected: Any,
        actual: Any) -> Divergence:
    return Divergence(step=step, line=step + 1, state=state, skill=skill, kind=kind,
                      path=path, expected=expected, actual=actual)


def searching(*queries: str) -> Behaviour:
    """WORK: search for each query, then move to CHECK (DONE from there)."""
    def behave(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        assert ctx.tools is not None
        found = [ctx.tools.call("search", {"q": q}).ok for q in queries]
        return Envelope.ok({"found": found}, rev=st["rev"] + 1, fsm="CHECK")
    return behave


def search_tools() -> ScriptedTools:
    """A search tool answering every query with itself as the one hit."""
    return ScriptedTools({"search": lambda args: {"hits": [args["q"]]}})
