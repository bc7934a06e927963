"""How a step's envelope becomes the session's next state: ``d`` folded in on ``ok``, or
the rollback the envelope asks for, a retry scheduled, or the move to the failure state.

The driver's :meth:`~claimfsm.engine.driver.Driver._build` runs the skill and checks what
came back; this is the other half of the step, the state it commits, kept apart so each
half reads on its own. A mixin, not free functions, because it is called once per step
and reads half a dozen of the driver's fields: a method call costs no more than it did.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from claimfsm.engine.errors import ClaimFsmError, ErrorCode, IllegalTransition
from claimfsm.engine.limits import LIMIT_CODES, next_runtime
from claimfsm.engine.step import iso
from claimfsm.state.model import RetryState, Revision, SessionState, builder
from claimfsm.state.rollback import entry_state, tools_restored

if TYPE_CHECKING:
    from claimfsm.engine.bindings import Binding
    from claimfsm.engine.machine import Machine, MachineDef, StateSpec
    from claimfsm.engine.step import ToolSession
    from claimfsm.skills.context import Clock
    from claimfsm.skills.envelope import Envelope
    from claimfsm.state.store import StateStore

__all__ = ["FoldMixin", "StaleRev"]


class FoldMixin:
    """The next state of a step and when a scheduled retry is due, for
    :class:`~claimfsm.engine.driver.Driver`."""

    store: StateStore
    definition: MachineDef
    machine: Machine
    clock: Clock
    _specs: dict[str, StateSpec]

    def _retry_wait(self, head: Revision, now: datetime | None = None) -> float:
        retry = head.state.retry
        if retry is None or retry.next_at is None or retry.state != head.fsm:
            return 0.0
        now = now or self.clock.now()
        return max(0.0, (datetime.fromisoformat(retry.next_at) - now).total_seconds())

    def _next_state(
        self,
        head: Revision,
        env: Envelope,
        binding: Binding,
        tools: ToolSession | None,
        events: list[dict[str, Any]],
        now: datetime,
    ) -> tuple[SessionState, str, list[dict[str, Any]]]:
        state, fsm = head.state, head.fsm
        spec = self._specs[fsm]
        # Spent calls are never given back. Without tools nothing was spent: the runtime
        # is shared with the parent (the store sees an unchanged field by identity).
        runtime = state.runtime if tools is None else next_runtime(state.runtime, tools)
        if env.s == "ok":
            move = env.move()
            if move is None:
                raise IllegalTransition(f"{spec.skill}: ok envelope without d.sp", sid=head.sid)
            rev, to = move
            if rev != head.rev + 1:
                raise StaleRev(f"sp.rev is {rev}, expected head+1 = {head.rev + 1}")
            self.machine.fire(fsm, to)
            update: dict[str, Any] = {"fsm": to, "retry": None, "error": None,
                                      "runtime": runtime}
            if tools is not None:
                update["policy"] = dict(tools.policy_state)
            if to != fsm:
                update["entry_rev"] = head.rev + 1
            patch = binding.patch
            if patch is not None:  # the binding's fields and the driver's: one new state
                fields = {**state.__dict__, **patch(state, env.data, to), **update}
            else:
                fields = {**binding.apply(state, env.data, to).__dict__, **update}
            # ``model_copy(update=...)`` without its copies: the values are the driver's.
            return _state(fields), to, events
        assert env.e is not None
        code, msg = env.e.code, env.e.msg
        if env.rb == "state":
            state = entry_state(self.store, head.sid, head)
            events = [*events, {"type": "Rollback", "rb": "state", "to": state.entry_rev}]
        elif env.rb == "tools":
            state = tools_restored(self.store, head.sid, head)
            events = [*events, {"type": "Rollback", "rb": "tools", "to": state.entry_rev}]
        policy = spec.retry
        attempts = (state.retry.attempts if state.retry and state.retry.state == fsm else 0) + 1
        retryable = (env.s == "retry" or code in policy.codes) and code not in LIMIT_CODES
        if retryable and attempts < policy.max_attempts:
            nxt = now + timedelta(seconds=policy.delay(attempts))
            retry = RetryState(state=fsm, attempts=attempts, next_at=iso(nxt), code=code)
            events = [*events, {"type": "RetryScheduled", "attempt": attempts, "code": code}]
            update = {"retry": retry, "fsm": fsm, "runtime": runtime}
            return state.model_copy(update=update), fsm, events
        failure = self.definition.failure
        if failure is None:
            raise IllegalTransition(f"{code} in {fsm} and the machine has no failure state")
        self.machine.move(fsm, failure)
        if retryable:
            code, msg = "RETRY_EXHAUSTED", f"{attempts} attempts in {fsm}; last: {code}: {msg}"
        retry = RetryState(state=fsm, attempts=attempts, next_at=None, code=env.e.code)
        failed = state.model_copy(update={"fsm": failure, "error": {"code": code, "msg": msg},
                                          "retry": retry if retryable else None,
                                          "entry_rev": head.rev + 1, "runtime": runtime})
        return failed, failure, events


# Every field the engine builds a step's state from is its own, each checked: built
# without validation (``trusted``, its look-ups done once).
_state = builder(SessionState)


class StaleRev(ClaimFsmError):
    """The envelope's ``sp.rev`` is not head+1 (caught by the driver's step, which
    reports it as ``REV_CONFLICT``; never raised out of it)."""

    code = ErrorCode.REV_CONFLICT
