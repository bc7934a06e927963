"""The driver's methods for people and timers: input, resume, edit, and advancing a
session that is due (a passed wait deadline, a due retry).

Each commits at most one revision with compare-and-set on the head it read, so two
people, or two tickers, racing for the same session land it once: the loser gets
``REV_CONFLICT`` (input, edit, resume) or skips the session (tick). The revisions
themselves are built in :mod:`claimfsm.engine.people`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from claimfsm.engine.bindings import Binding
from claimfsm.engine.people import (
    edit_revision,
    hold_for,
    input_revision,
    resume_revision,
    timeout_revision,
)
from claimfsm.engine.step import StepResult, iso
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import RevConflict
from claimfsm.state.holds import HOLD_KEY, due_key, hold_of, timer_of
from claimfsm.state.model import Revision, SessionState

if TYPE_CHECKING:
    from claimfsm.engine.machine import MachineDef
    from claimfsm.skills.context import Clock
    from claimfsm.state.store import StateStore

__all__ = ["PeopleMixin"]


class PeopleMixin:
    """Input, resume, edit and tick for :class:`~claimfsm.engine.driver.Driver`, and the
    holds its step reads and writes."""

    store: StateStore
    definition: MachineDef
    clock: Clock

    def input(self, sid: str, payload: Any, *, expected_rev: int | None = None,
              actor: str = "cli") -> Revision:
        """Commit ``payload`` as the input the session waits for: exactly one revision
        with an ``InputReceived`` event (actor, time, payload), moving where the wait
        state's input chooses. ``REV_CONFLICT`` for a stale ``expected_rev`` (or a
        racing writer), ``NOT_WAITING``, ``BAD_INPUT`` naming the field."""
        head = self.store.head(sid)
        rev = input_revision(self.definition, head, payload, actor=actor,
                             now=self.clock.now(), expected_rev=expected_rev)
        return self.store.commit(rev, expected_rev=head.rev)

    def resume(self, sid: str, *, expected_rev: int | None = None,
               actor: str = "cli") -> Revision:
        """Lift the pause the session is in (one revision with a ``Resumed`` event);
        ``NOT_WAITING`` when it is not paused."""
        head = self.store.head(sid)
        rev = resume_revision(self.definition, head, actor=actor, now=self.clock.now(),
                              expected_rev=expected_rev)
        return self.store.commit(rev, expected_rev=head.rev)

    def edit(self, sid: str, changes: Sequence[tuple[str, Any]], *,
             expected_rev: int | None = None, actor: str = "cli") -> Revision:
        """Set declared editable fields of a waiting or paused session: one revision with
        an ``Edited`` event listing each field's old and new value; the session keeps
        holding. ``NOT_EDITABLE`` for anything else."""
        head = self.store.head(sid)
        rev = edit_revision(self.definition, head, changes, actor=actor,
                            now=self.clock.now(), expected_rev=expected_rev)
        return self.store.commit(rev, expected_rev=head.rev)

    def advance(self, sid: str, now: datetime | None = None, *,
                head: Revision | None = None) -> Revision | None:
        """Advance ``sid`` if it is due at ``now``: a passed wait deadline moves it to the
        wait state's ``on_timeout`` (``TimedOut``), a due retry runs its step. The
        revision committed, or ``None`` when it was not due or another writer won.
        ``head`` (read earlier, maybe stale) saves reading it: the commit's
        compare-and-set refuses it if the session moved since."""
        now = now or self.clock.now()
        head = head if head is not None else self.store.head(sid)
        if not self.is_due(head, now):
            return None
        if hold_of(head.state) is not None:
            rev = self.timed_out(head, now)
            if rev is None:
                return None
            try:
                return self.store.commit(rev, expected_rev=head.rev)
            except RevConflict:
                return None
        return self._step(head).revision

    @staticmethod
    def is_due(head: Revision, now: datetime) -> bool:
        """Whether the session's wait deadline or retry is due at ``now``."""
        timer = timer_of(head.state)
        return timer is not None and timer[0] is not None and timer[0] <= due_key(
            now.isoformat())

    def timed_out(self, head: Revision, now: datetime) -> Revision | None:
        """The ``TimedOut`` revision of a holding session whose deadline passed (not
        committed: ``claimfsm tick`` commits a batch of them at once), else ``None``."""
        return timeout_revision(self.definition, head, now)

    def _step(self, head: Revision) -> StepResult:  # the driver's one step
        raise NotImplementedError

    # -- holds in the driver's step -------------------------------------------------------

    def _holding(self, head: Revision) -> StepResult | None:
        """A step of a holding session: ``WAITING``, nothing committed (``None``: it
        does not hold)."""
        hold = hold_of(head.state)
        if hold is None and head.fsm not in self.definition.waits:
            return None
        what = (f"input ({hold.get('input')}) in {head.fsm}" if hold and
                hold["kind"] == "input" else f"resume (paused {hold['when']} {head.fsm})"
                if hold else f"input in {head.fsm}")
        env = Envelope.error("WAITING", f"session {head.sid} waits for {what}")
        return StepResult(head.sid, head.fsm, head.fsm, None, env, None,
                          ts=iso(self.clock.now()))

    def _hold(self, state: SessionState, before: str, after: str, ts: str, now: datetime,
              events: list[dict[str, Any]]) -> tuple[SessionState, list[dict[str, Any]]]:
        # Only steps that move, or sessions with pause points, get here: the usual step
        # neither reads nor writes a hold.
        hold = hold_for(self.definition, state.config, before, after, ts, now)
        runtime = state.runtime
        if hold is None and HOLD_KEY not in runtime:
            return state, events
        runtime = {k: v for k, v in runtime.items() if k != HOLD_KEY}
        if hold is not None:
            runtime[HOLD_KEY] = hold
            events = [*events, {"type": "Waiting", "hold": hold}]
        return state.model_copy(update={"runtime": runtime}), events

    def _routed(self, binding: Binding, state: SessionState, env: Envelope) -> Envelope:
        move = env.move()
        if move is None or binding.route is None:
            return env
        to = binding.route(state, env.data, move[1])
        return env if to == move[1] else Envelope.ok(env.data, rev=move[0], fsm=to)

