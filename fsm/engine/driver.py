"""The driver: the only writer of session state.

One :meth:`Driver.step` = build the bound skill's input from the head revision, run the
skill, check its envelope (``sp.rev`` is head+1, ``sp.fsm`` a legal move), fold ``d`` into
the state or apply the rollback the envelope asks for, and commit exactly one revision with
compare-and-set. Contract violations (illegal move, stale revision, a crashing skill) are
reported as error envelopes and commit nothing.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.errors import IllegalTransition, MachineMismatch, SessionFinished, UnknownSkill
from claimfsm.engine.fold import FoldMixin, StaleRev
from claimfsm.engine.inputs import PeopleMixin
from claimfsm.engine.lifecycle import LifecycleMixin
from claimfsm.engine.limits import deadline_envelope, limit_envelope, seconds_left
from claimfsm.engine.machine import DEFAULT_MACHINE, Machine, MachineDef
from claimfsm.engine.migrate import check_version
from claimfsm.engine.observer import StepObserver
from claimfsm.engine.people import actor_event, check_actor, may_hold
from claimfsm.engine.step import StepResult, ToolSession, ToolsFactory, iso
from claimfsm.engine.version import Versioning, machine_version
from claimfsm.skills.context import Clock, SeqIds, SkillContext, SystemClock, ToolCall
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import RevConflict
from claimfsm.state.holds import HOLD_KEY, hold_of
from claimfsm.state.model import Revision, builder
from claimfsm.state.store import StateStore

__all__ = ["Driver", "StepResult", "ToolSession", "ToolsFactory", "iso"]


class Driver(LifecycleMixin, FoldMixin, PeopleMixin):
    """Runs sessions of one machine over one store: starts, rewinds and forks them
    (:class:`~claimfsm.engine.lifecycle.LifecycleMixin`), steps them (here, with the next
    state from :class:`~claimfsm.engine.fold.FoldMixin`) and takes people's input, edits
    and resumes (:class:`~claimfsm.engine.inputs.PeopleMixin`)."""

    def __init__(
        self,
        store: StateStore,
        *,
        machine: MachineDef = DEFAULT_MACHINE,
        bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
        tools: ToolsFactory | None = None,
        clock: Clock | None = None,
        new_sid: Callable[[], str] | None = None,
        sleep: Callable[[float], None] | None = None,
        on_step: Callable[[StepResult], None] | None = None,
        versioning: Versioning | None = None,
        registered: Mapping[str, Driver] | None = None,
        observer: StepObserver | None = None,
    ) -> None:
        self.store = store
        self.definition = machine
        self.machine = Machine(machine)
        for spec in machine.states:
            if spec.skill and spec.skill not in bindings:
                raise UnknownSkill(f"state {spec.name} binds unknown skill {spec.skill!r}")
        self.bindings = bindings
        self._finals = machine.finals
        self._specs = {spec.name: spec for spec in machine.states}
        # (skill name, binding) of each state that runs a skill, filled as states are
        # first stepped (the default bindings import a skill's module on first use).
        self._bound: dict[str, tuple[str, Binding]] = {}
        self.tools = tools
        self.clock: Clock = clock or SystemClock()
        self.new_sid = new_sid or (lambda: uuid.uuid4().hex[:12])
        self.sleep = sleep or time.sleep
        self.on_step = on_step
        #: This machine's version, its migrations and what to do with another version.
        self.versioning = versioning or Versioning(machine_version(machine, bindings))
        self.version = self.versioning.version
        #: Drivers of older versions still registered: their sessions run on them.
        self.registered = dict(registered or {})
        # sid -> (the head revision this driver last committed or checked for it, the
        # version it runs on): a step from exactly that head needs no version check
        # (nobody else moved the session); this driver's own is ``self.version`` itself.
        self._seen: dict[str, tuple[int, str]] = {}
        #: Traces, metrics and logs of each step (:mod:`claimfsm.observe`), or None.
        self.observer = observer

    def run(self, sid: str, *, max_steps: int = 1000, actor: str | None = None) -> Revision:
        """Step until a final state, an uncommitted failure, or ``max_steps``; each
        step records ``actor`` as :meth:`step` does.

        The head is read once; after that, the revision a step committed is the next
        head (its compare-and-set has just shown it is). If another writer moved the
        session on in between, the next commit loses its compare-and-set: the head is
        then read again and that step run once more from it.
        """
        if actor is not None:
            check_actor(actor)
        finals = self._finals
        head_of = self.store.head
        head = head_of(sid)
        fresh = True
        for _ in range(max_steps):
            if head.fsm in finals:
                return head
            if head.state.runtime and HOLD_KEY in head.state.runtime and hold_of(head.state):
                return head  # waits for a person: nothing to run, nothing to report
            if head.state.retry is not None:
                wait = self._retry_wait(head)
                left = seconds_left(head.state, self.clock.now()) if wait > 0 else None
                if left is not None:  # never sleep past the session's deadline
                    wait = min(wait, max(0.0, left))
                if wait > 0:
                    self.sleep(wait)
            result = self._step(head, actor)
            if result.revision is not None:
                head, fresh = result.revision, False
            elif result.lost_race and not fresh:
                head, fresh = head_of(sid), True
            else:
                return head_of(sid)
        return head_of(sid)

    # -- one step -------------------------------------------------------------------------

    def step(self, sid: str, *, actor: str | None = None) -> StepResult:
        """Fire one transition of ``sid``; see the module docstring. ``actor`` (who asked
        for it: an API key's name) goes into the committed revision's last event,
        ``{"type": "Actor", "actor": ...}``; ``None`` adds nothing."""
        if actor is not None:
            check_actor(actor)
        return self._step(self.store.head(sid), actor)

    def _step(self, head: Revision, actor: str | None = None) -> StepResult:
        observer = self.observer
        if observer is not None:
            fire = self._fire if actor is None else functools.partial(self._fire, actor=actor)
            return observer.step(head, fire)
        return self._fire(head, actor)

    def _fire(self, head: Revision, actor: str | None = None) -> StepResult:
        other = self._other_version(head, actor)
        if other is not None:
            return other
        result, rev = self._build(head, actor)
        if rev is None:
            return self._report(result)
        try:
            result.revision = self.store.commit(rev, expected_rev=head.rev)
        except RevConflict as exc:
            return self._lost(result, exc)
        return self._landed(result, rev)

    def _other_version(self, head: Revision, actor: str | None = None) -> StepResult | None:
        """The step taken for a session on another machine version (by its registered
        driver, or the crossing to this one); ``None``: it runs on this driver."""
        seen = self._seen.get(head.sid)
        if (seen is None or seen[0] != head.rev or seen[1] is not self.version) \
                and head.fsm not in self._finals:
            return check_version(self, head, seen, actor)
        return None

    def _lost(self, result: StepResult, exc: RevConflict) -> StepResult:
        """The step's commit lost its compare-and-set: reported, nothing stored."""
        result.envelope = Envelope.error("REV_CONFLICT", exc.msg)
        result.lost_race = True
        return self._report(result)

    def _landed(self, result: StepResult, rev: Revision) -> StepResult:
        """The step's revision is committed (``result.revision`` set by the caller)."""
        self._remember(rev.sid, rev.rev)
        result.after = rev.fsm
        return result if self.on_step is None else self._report(result)

    def _build(self, head: Revision, actor: str | None = None
               ) -> tuple[StepResult, Revision | None]:
        """One step up to its commit: the result and the revision to commit from
        ``head`` (``None``: nothing to commit; the result says why), its events ending
        with ``actor``'s when given. The sync
        :meth:`step` commits it here; :class:`~claimfsm.engine.async_driver.AsyncDriver`
        builds it on a worker thread and commits it on the event loop."""
        sid, state, fsm = head.sid, head.state, head.fsm
        bound = self._bound.get(fsm)
        if bound is None:
            held = self._holding(head)
            if held is not None:
                return held, None
            bound = self._bind(sid, fsm)
        elif state.runtime and HOLD_KEY in state.runtime:
            held = self._holding(head)
            if held is not None:
                return held, None
        name, binding = bound
        clock = self.clock
        now = clock.now()
        ts = now.isoformat() if now.microsecond else iso(now)  # iso(now), one call fewer
        # Past the session's deadline: run nothing. (No runtime, no deadline.)
        expired = deadline_envelope(state, now) if state.runtime else None
        if expired is None and state.retry is not None and self._retry_wait(head, now) > 0:
            assert state.retry is not None
            env = Envelope.retry("RETRY_NOT_DUE", f"next attempt at {state.retry.next_at}")
            return StepResult(sid, fsm, fsm, None, env, None, ts=ts), None
        tools = self.tools(state, clock) if self.tools else None
        ctx = SkillContext(clock, SeqIds(), tools)
        try:
            inp = binding.to_input(state, {"sid": sid, "rev": head.rev, "fsm": fsm})
            model = inp if binding.build is None else binding.build(inp)
        except Exception as exc:  # a binding bug: report, touch nothing
            env = Envelope.error("INTERNAL", f"{name} input: {type(exc).__name__}: {exc}")
            return StepResult(sid, fsm, fsm, name, env, None, ts=ts), None
        env = expired or binding.skill.run(model, ctx)
        if binding.route is not None and env.s == "ok":
            env = self._routed(binding, state, env)
        calls: list[ToolCall] = []
        events: list[dict[str, Any]] = []
        if tools is not None:
            calls, events = list(tools.calls), list(tools.events)
            if calls:  # whole calls, results included, so `claimfsm export` can rebuild a record
                events.append({"type": "ToolCalls",
                               "calls": [c.model_dump(mode="json") for c in calls]})
        limit = expired or (limit_envelope(calls) if calls else None)
        if limit is not None and limit.e is not None:  # the session's deadline or budget ran out
            events.append({"type": "LimitExceeded", "code": limit.e.code, "msg": limit.e.msg})
            env = limit
        result = StepResult(sid, fsm, fsm, name, env, None, inp, calls, ts)
        if env.e is not None and env.e.code == "INTERNAL":
            return result, None
        try:
            new_state, after, events = self._next_state(head, env, binding, tools, events, now)
        except IllegalTransition as exc:
            result.envelope = Envelope.error(exc.code, exc.msg)
            return result, None
        except StaleRev as exc:
            result.envelope = Envelope.error("REV_CONFLICT", str(exc))
            return result, None
        except Exception as exc:  # an apply bug: report, touch nothing
            result.envelope = Envelope.error(
                "INTERNAL", f"{name} apply: {type(exc).__name__}: {exc}"
            )
            return result, None
        if (state.runtime and HOLD_KEY in state.runtime) or (
                after != fsm and may_hold(self.definition, new_state.config, after)):
            new_state, events = self._hold(new_state, fsm, after, ts, now, events)
        if actor is not None:
            events = [*events, actor_event(actor)]
        # Every field is the engine's own, each checked above: built without validation.
        rev = _revision({
            "sid": sid, "rev": head.rev + 1, "parent_rev": head.rev, "fsm": after,
            "skill": name, "envelope": env.to_dict(), "state": new_state, "ts": ts,
            "events": events,
        })
        return result, rev

    def _remember(self, sid: str, rev: int, version: str | None = None) -> None:
        seen = self._seen
        if len(seen) >= 65536:  # a long-lived driver: forget, and check again
            seen.clear()
        seen[sid] = (rev, version or self.version)

    def _bind(self, sid: str, fsm: str) -> tuple[str, Binding]:
        if fsm in self._finals:
            raise SessionFinished(f"session {sid} is in final state {fsm}", sid=sid)
        spec = self._specs.get(fsm)
        if spec is None:
            raise MachineMismatch(
                f"session {sid} is in state {fsm}, which machine {self.definition.name!r} does "
                "not have (was it started by another machine? drive it with that one)",
                sid=sid)
        assert spec.skill is not None  # validated: non-final states bind a skill
        bound = self._bound[fsm] = (spec.skill, self.bindings[spec.skill])
        return bound

    def _report(self, result: StepResult) -> StepResult:
        if self.on_step is not None:
            self.on_step(result)
        return result


# Every field the engine builds a step's revision from is its own, each checked: built
# without validation (``trusted``, its look-ups done once).
_revision = builder(Revision)
