"""Rollback as pure functions over a store: they read, build and return; only the driver
commits what they build.
"""

from __future__ import annotations

from claimfsm.state.errors import UnknownRevision
from claimfsm.state.holds import HOLD_KEY, VERSION_KEY
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["entry_state", "rewind_revision", "tools_restored"]


def entry_state(store: StateStore, sid: str, head: Revision) -> SessionState:
    """The state as it was when the session entered its current FSM state (``rb=state``):
    the state of revision ``head.state.entry_rev``.
    """
    entry_rev = head.state.entry_rev
    if not 0 <= entry_rev <= head.rev:
        raise UnknownRevision(
            f"entry_rev {entry_rev} is outside 0..{head.rev}", sid=sid, rev=entry_rev
        )
    if entry_rev == head.rev:
        return head.state
    return store.get(sid, entry_rev).state


def tools_restored(store: StateStore, sid: str, head: Revision) -> SessionState:
    """``head``'s state with only the tool slice taken from the entry revision
    (``rb=tools``); everything else is kept.
    """
    return head.state.restore_tools_from(entry_state(store, sid, head))


def rewind_revision(store: StateStore, sid: str, to: int, *, ts: str,
                    reopen: bool = False, actor: str | None = None) -> Revision:
    """The new head revision (not committed) whose state equals revision ``to``'s:
    ``rev = head + 1``, ``parent_rev = head``, ``skill = "rewind"``, no envelope and one
    ``Rewind`` event (``reopen: true`` when it reopens a failed session; ``actor`` when
    given: who asked, an API key's name). History before
    it is kept; commit it with ``expected_rev = head``.

    ``state.runtime`` (spent tool calls, rate buckets, the deadline) is the head's, not
    the target's: what a session spent stays spent, so a rewind can never refill a budget.
    Its hold is the target's (a person's wait belongs to the revision).
    """
    head = store.head(sid)
    target = store.get(sid, to)
    event: dict[str, object] = {"type": "Rewind", "to": to}
    if reopen:
        event["reopen"] = True
    if actor is not None:
        event["actor"] = actor
    return Revision(
        sid=sid,
        rev=head.rev + 1,
        parent_rev=head.rev,
        fsm=target.fsm,
        skill="rewind",
        envelope=None,
        state=target.state.model_copy(update={"runtime": _runtime(head, target)}),
        ts=ts,
        events=[event],
    )


#: Runtime keys that follow the target of a rewind rather than stay the head's.
_TARGET_KEYS = (HOLD_KEY, VERSION_KEY)


def _runtime(head: Revision, target: Revision) -> dict[str, object]:
    """The head's runtime (spent budgets are never refunded) with the target's hold
    (state.holds) and version: a rewind to a revision that waited waits again, one away
    from a wait does not, and one to before a crossing is on the old version again."""
    runtime = head.state.runtime
    theirs = target.state.runtime
    if all(runtime.get(k) == theirs.get(k) for k in _TARGET_KEYS):
        return runtime
    out = {k: v for k, v in runtime.items() if k not in _TARGET_KEYS}
    for key in _TARGET_KEYS:
        if theirs.get(key) is not None:
            out[key] = theirs[key]
    return out
