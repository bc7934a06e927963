"""A hypothesis state machine firing random envelopes at the driver.

Envelopes: ``s`` in ok/error/retry, ``rb`` in none/state/tools, legal and illegal
``sp.fsm``, stale and future ``sp.rev``; the clock moves on at random. Invariants after
every step: the head grows by exactly one revision or not at all; a step that is refused
(illegal move, stale revision, retry not due) changes nothing; ``rb=state`` restores the
entry revision's state byte for byte (save the fields the driver sets on failure);
``rb=tools`` restores exactly the entry revision's tool slice and keeps the rest; no
earlier revision of any session ever reads back different.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from claimfsm.engine.bindings import Binding
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.skills.envelope import Envelope, ErrorInfo
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import SessionState
from claimfsm.testing import scripted_skill
from tests.support.documented import documented_tool_slice

M = DEFAULT_MACHINE
# Where a session stops for good in this test: a final state, or REVIEW (a wait state:
# steps commit nothing there; tests/engine/test_people*.py drive input).
STOPS = M.finals | frozenset(M.waits)
# What the driver itself writes on a failed step (and ``runtime``, which by design is never
# rolled back: spent tool calls are not given back).
DRIVER_FIELDS = {"fsm", "retry", "error", "entry_rev", "runtime"}
TOOL_SLICE_DOC = documented_tool_slice()


def _apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    mem = d.get("mem", {})
    # ``evidence`` is outside the tool slice: it grows here too, so a rollback that
    # restored it (or kept a tool field) would read back different.
    update: dict[str, Any] = {"memory": {**state.memory, **mem},
                              "evidence": {**state.evidence,
                                           **{k: [{"v": v}] for k, v in mem.items()}}}
    if "tool" in d:  # the tool slice: results and pages
        update["tool_results"] = [*state.tool_results, d["tool"]]
        update["pages"] = {**state.pages, d["tool"]["id"]: {"text": d["tool"]["id"]}}
    return state.model_copy(update=update)


def _to_input(state: SessionState, st_: dict[str, Any]) -> dict[str, Any]:
    return {"memory": dict(state.memory), "st": st_}


class DriverMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from claimfsm.skills.context import FixedClock

        self.clock = FixedClock()
        self.store = MemoryStore()
        self.next: Callable[[dict[str, Any]], Envelope] = lambda st_: Envelope.error("X", "x")
        skill = scripted_skill("any", lambda st_: self.next(st_))
        bindings: dict[str, Binding] = {
            spec.skill: Binding(skill, _to_input, _apply) for spec in M.states if spec.skill}
        counter = iter(range(1, 1 << 30))
        self.driver = Driver(self.store, machine=M, bindings=bindings, clock=self.clock,
                             new_sid=lambda: f"S{next(counter)}", sleep=lambda s: None)
        self.seen: dict[tuple[str, int], str] = {}
        self.tools = 0
        self.sid = self._new()

    def _new(self) -> str:
        sid = self.driver.start("a claim").sid
        self.seen[(sid, 0)] = self.store.head(sid).model_dump_json()
        return sid

    def _fire(self, make: Callable[[dict[str, Any]], Envelope]) -> StepResult:
        if self.store.head(self.sid).fsm in STOPS:
            self.sid = self._new()
        before = self.store.head(self.sid)
        self.next = make
        result = self.driver.step(self.sid)
        after = self.store.head(self.sid)
        assert after.rev == before.rev + (1 if result.committed else 0)
        if not result.committed:
            assert after.model_dump_json() == before.model_dump_json()
        else:
            assert result.revision is not None and after.rev == result.revision.rev
            assert after.parent_rev == before.rev
            self.seen[(self.sid, after.rev)] = after.model_dump_json()
        return result

    @rule(legal=st.booleans(), pick=st.integers(0, 30),
          rev=st.sampled_from(["next", "next", "next", "stale", "ahead"]),
          tool=st.booleans(), value=st.integers(0, 9))
    def ok(self, legal: bool, pick: int, rev: str, tool: bool, value: int) -> None:
        if self.store.head(self.sid).fsm in STOPS:
            self.sid = self._new()
        before = self.store.head(self.sid)
        # Legal moves from here (the RETRIEVAL self-loop included), or any other state.
        options = M.targets(before.fsm) if legal else tuple(
            n for n in M.names if n not in M.targets(before.fsm))
        dest = options[pick % len(options)]
        self.tools += 1
        data: dict[str, Any] = {"mem": {f"k{value}": value}}
        if tool:
            data["tool"] = {"id": f"t{self.tools}"}
        shift = {"next": 1, "stale": 0, "ahead": 2}[rev]
        result = self._fire(lambda st_: Envelope.ok(data, rev=st_["rev"] + shift, fsm=dest))
        code = result.envelope.e.code if result.envelope.e else None
        if code == "RETRY_NOT_DUE":
            assert not result.committed
        elif not legal and rev == "next":
            assert code == "ILLEGAL_TRANSITION" and not result.committed
        elif rev != "next":
            assert code == "REV_CONFLICT" and not result.committed
        else:
            assert result.committed and result.after == dest

    @rule(tool=st.booleans(), value=st.integers(0, 9))
    def onward(self, tool: bool, value: int) -> None:
        """A legal move that stays put when it can (RETRIEVAL's loop), so sessions build
        up state inside one FSM state for a rollback to undo."""
        head = self.store.head(self.sid)
        if head.fsm in STOPS:
            return
        targets = M.targets(head.fsm)
        pick = targets.index(head.fsm) if head.fsm in targets else 0
        self.ok(True, pick, "next", tool, value)

    @rule(s=st.sampled_from(["error", "retry"]), rb=st.sampled_from(["none", "state", "tools"]),
          code=st.sampled_from(["BOOM", "RATE_LIMITED"]))
    def failure(self, s: str, rb: str, code: str) -> None:
        env = Envelope.model_construct(s=s, d=None, e=ErrorInfo(code=code, msg="m"), rb=rb)
        before = self.store.head(self.sid)
        if before.fsm in STOPS:
            self.sid = self._new()
            before = self.store.head(self.sid)
        result = self._fire(lambda st_: env)
        if not result.committed:
            assert result.envelope.e is not None
            assert result.envelope.e.code == "RETRY_NOT_DUE"
            return
        new = self.store.head(self.sid).state
        entry = self.store.get(self.sid, before.state.entry_rev).state
        if rb == "state":
            assert new.model_dump_json(exclude=DRIVER_FIELDS) == entry.model_dump_json(
                exclude=DRIVER_FIELDS)
        elif rb == "tools":
            # The documented slice (docs/concepts.md), not TOOL_SLICE: the test must fail
            # when the constant drifts from what users are promised.
            for field in TOOL_SLICE_DOC:
                assert getattr(new, field) == getattr(entry, field), field
            keep = set(SessionState.model_fields) - set(TOOL_SLICE_DOC) - DRIVER_FIELDS
            assert new.model_dump_json(include=keep) == before.state.model_dump_json(
                include=keep)
            ids = {r["id"] for r in new.tool_results}
            assert ids <= {r["id"] for r in entry.tool_results}  # nothing newer survives
        else:
            assert new.model_dump_json(exclude=DRIVER_FIELDS) == before.state.model_dump_json(
                exclude=DRIVER_FIELDS)

    @rule(seconds=st.integers(0, 120))
    def wait(self, seconds: int) -> None:
        self.clock.advance(timedelta(seconds=seconds))

    @rule()
    def another_session(self) -> None:
        self.sid = self._new()

    @invariant()
    def history_is_never_lost(self) -> None:
        for (sid, rev), dumped in self.seen.items():
            assert self.store.get(sid, rev).model_dump_json() == dumped
        for sid in self.store.sessions():
            assert self.store.verify_chain(sid).ok


DriverMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40,
                                           deadline=None)
TestDriverStateful = DriverMachine.TestCase
