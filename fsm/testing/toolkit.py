"""The testing toolkit for people who add skills or states (see ``docs/testing.md``).

- a fixed clock and id source: :class:`FixedClock`, :class:`SeqIds`;
- :func:`run_skill`: one skill alone, on a dict, JSON or its input model;
- :func:`step_once` / :func:`fire`: one transition from a given FSM state and session
  state, through the real driver (envelope checks, bindings, rollback, retry);
- matchers for values that change between runs: :data:`ANY`, :data:`ANY_ID`,
  :data:`ANY_TS`, :func:`approx`, :func:`matches`;
- scripted stand-ins: :class:`ScriptedTools`, :func:`scripted_skill`,
  :func:`scripted_driver`, envelope builders :func:`goto`, :func:`fail`, :func:`retry`;
- path enumeration: :func:`shortest_paths`, :func:`simple_paths`,
  :func:`transition_coverage`, and :func:`drive_path` to walk one;
- :func:`noop_session`: a recorded session of no-op skills (replay benchmarks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.driver import Driver, StepResult, ToolsFactory, iso
from claimfsm.engine.errors import UnknownSkill
from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef, StateSpec
from claimfsm.replay.record import End, Record, Step
from claimfsm.replay.seal import HashChain
from claimfsm.replay.write import header_for, step_from_result
from claimfsm.skills.base import Skill
from claimfsm.skills.context import Clock, FixedClock, IdSource, SeqIds, SkillContext, ToolCaller
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.registry import all_skills
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState
from claimfsm.testing.paths import (
    Path,
    shortest_paths,
    simple_paths,
    transition_coverage,
    uncovered,
)
from claimfsm.testing.scripts import (
    AnyInput,
    Script,
    ScriptedTools,
    ToolFailure,
    drive_path,
    fail,
    goto,
    retry,
    scripted_bindings,
    scripted_driver,
    scripted_skill,
)

__all__ = [
    "ANY",
    "ANY_ID",
    "ANY_TS",
    "AnyInput",
    "FixedClock",
    "ListResource",
    "Matcher",
    "Path",
    "Script",
    "ScriptedTools",
    "SeqIds",
    "ToolFailure",
    "approx",
    "drive_path",
    "fail",
    "fire",
    "goto",
    "make_state",
    "matches",
    "noop_session",
    "retry",
    "run_skill",
    "scripted_bindings",
    "scripted_driver",
    "scripted_skill",
    "shortest_paths",
    "simple_paths",
    "step_once",
    "transition_coverage",
    "uncovered",
]


def run_skill(
    skill: str | Skill[Any, Any],
    input: Mapping[str, Any] | bytes | str | BaseModel,
    *,
    clock: Clock | None = None,
    tools: ToolCaller | None = None,
    ids: IdSource | None = None,
) -> Envelope:
    """Run one skill (a built-in by name, or a ``Skill``) with a fixed clock by default."""
    if isinstance(skill, str):
        known = all_skills()
        if skill not in known:
            raise UnknownSkill(f"no skill {skill!r} (known: {', '.join(known)})", field="skill")
        skill = known[skill]
    ctx = SkillContext(clock=clock or FixedClock(), ids=ids or SeqIds(), tools=tools)
    return skill.run(input, ctx)


def make_state(claim: str = "a claim", *, sid: str = "S1", fsm: str = "PARSE_CLAIM",
               **fields: Any) -> SessionState:
    """A session state with the given fields (validated)."""
    return SessionState.model_validate({"sid": sid, "claim": claim, "fsm": fsm, **fields})


def fire(
    fsm: str,
    session_state: SessionState | Mapping[str, Any] | None = None,
    *,
    envelope: Script | None = None,
    skill: Skill[Any, Any] | None = None,
    machine: MachineDef = DEFAULT_MACHINE,
    bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
    clock: FixedClock | None = None,
    tools: ToolsFactory | None = None,
) -> StepResult:
    """Fire one transition from ``fsm`` with ``session_state`` (at revision 0) through
    the driver and return what the step did.

    ``envelope`` (or a whole ``skill``) replaces the bound skill's answer while keeping
    the binding's input and apply, so the state mapping is exercised too.
    """
    clock = clock or FixedClock()
    if session_state is None:
        state = make_state(fsm=fsm)
    elif isinstance(session_state, SessionState):
        state = session_state
    else:
        state = SessionState.model_validate(dict(session_state))
    state = state.model_copy(update={"fsm": fsm, "entry_rev": 0})
    spec = machine.state(fsm)
    table = dict(bindings)
    if spec.skill is not None and (envelope is not None or skill is not None):
        base = table[spec.skill]
        replacement = skill or scripted_skill(spec.skill, envelope)  # type: ignore[arg-type]
        table[spec.skill] = Binding(replacement, base.to_input, base.apply)
    store = MemoryStore()
    store.create(Revision(sid=state.sid, rev=0, parent_rev=None, fsm=fsm, skill=None,
                          envelope=None, state=state, ts=iso(clock.now())))
    driver = Driver(store, machine=machine, bindings=table, tools=tools, clock=clock)
    return driver.step(state.sid)


def step_once(
    fsm: str, session_state: SessionState | Mapping[str, Any] | None = None, **kw: Any
) -> tuple[Envelope, str]:
    """:func:`fire`, reduced to ``(envelope, next FSM state)``."""
    result = fire(fsm, session_state, **kw)
    return result.envelope, result.after


class Matcher:
    """Equal to any value its predicate accepts; use inside expected dicts and lists."""

    def __init__(self, name: str, accept: Callable[[Any], bool]) -> None:
        self.name = name
        self.accept = accept

    def __eq__(self, other: object) -> bool:
        return bool(self.accept(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return self.name


def _is_ts(value: object) -> bool:
    if isinstance(value, datetime):
        return value.tzinfo is not None
    if not isinstance(value, str):
        return False
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo is not None
    except ValueError:
        return False


#: Anything at all.
ANY = Matcher("ANY", lambda v: True)
#: A non-empty id without whitespace (``t1``, ``s2``, a session id).
ANY_ID = Matcher("ANY_ID", lambda v: isinstance(v, str) and re.fullmatch(r"\S+", v) is not None)
#: A timezone-aware timestamp (ISO text or datetime).
ANY_TS = Matcher("ANY_TS", _is_ts)


def approx(expected: float, *, rel: float = 1e-6, abs: float = 1e-9) -> Matcher:
    """A number within ``rel``/``abs`` of ``expected`` (booleans never match)."""

    def accept(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return False
        return math.isclose(float(v), expected, rel_tol=rel, abs_tol=abs)

    return Matcher(f"approx({expected!r})", accept)


def matches(pattern: str) -> Matcher:
    """A string matching the regular expression ``pattern`` in full."""
    rx = re.compile(pattern)
    return Matcher(f"matches({pattern!r})",
                   lambda v: isinstance(v, str) and rx.fullmatch(v) is not None)


def noop_session(steps: int) -> tuple[Record, MachineDef, dict[str, Binding]]:
    """A recorded session of ``steps`` steps of a no-op skill (one state looping, then
    DONE), with the machine and bindings that replay it."""
    machine = MachineDef(name="noop", states=(StateSpec("WORK", skill="noop"),
                                              StateSpec("DONE", final=True)),
                         transitions=(("WORK", "WORK"), ("WORK", "DONE")), initial="WORK")

    def noop(st: dict[str, Any]) -> Envelope:
        nxt = st["rev"] + 1
        return Envelope.ok({}, rev=nxt, fsm="DONE" if nxt >= steps else "WORK")

    bindings = scripted_bindings(machine, {"WORK": noop})
    lines: list[Step] = []
    chain = HashChain()

    def keep(result: StepResult) -> None:
        rev = result.revision
        h = None if rev is None else chain.add(rev)
        lines.append(step_from_result(result, 0 if rev is None else rev.rev - 1, h))

    driver = scripted_driver(machine, bindings=bindings, on_step=keep)
    first = driver.start("no-op")
    first_h = chain.add(first)
    head = driver.run(first.sid, max_steps=max(1, steps))
    end = (End(rev=head.rev, fsm=head.fsm, verdict=None, h=lines[-1].h if lines else first_h)
           if head.fsm == "DONE" else None)
    record = Record(header=header_for(first, None, machine.name, first_h),
                    entries=tuple(lines), end=end)
    return record, machine, bindings


class ListResource:
    """A tool resource that supports the executor's ``snapshot()``/``restore(snap)``: a
    list a tool appends to, for testing that a failed call leaves nothing behind."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def snapshot(self) -> list[str]:
        """A copy of the items, taken before the handler runs."""
        return list(self.items)

    def restore(self, snap: list[str]) -> None:
        """Put the items back as they were at ``snap``."""
        self.items = list(snap)
