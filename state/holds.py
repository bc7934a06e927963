"""Holds and timers: what a session waits for, and when it is next due.

A session *holds* while it waits for a person: in a wait state (input) or at a pause
point (resume). The hold is stored in the revision, under ``state.runtime["hold"]``, so
every reader (the CLI, the API, a store's listing) sees it without the machine, and a
session that never holds stores not one byte more. A hold looks like::

    {"kind": "input", "state": "REVIEW", "input": "ReviewInput", "since": TS,
     "until": TS | None, "on_timeout": "DONE" | None}
    {"kind": "pause", "state": "VERIFY", "when": "before" | "after", "since": TS}

A session is *due* at the earliest of its hold's ``until`` and its pending retry's
``next_at``: that is what ``claimfsm tick`` looks for, and what a store indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from claimfsm.state.model import Revision, SessionState

__all__ = [
    "HOLD_KEY", "VERSION_KEY", "Timer", "due_key", "due_sessions", "hold_of", "since_key",
    "status_of", "timer_change", "timer_of", "waiting_json",
]

HOLD_KEY = "hold"
"""The key of ``state.runtime`` that holds a session's hold."""

VERSION_KEY = "version"
"""The key of ``state.runtime`` that holds the machine version a crossing (a migration,
``--on-version continue``) moved the session to, so that reading a session's version
costs one look, not a walk back through its history
(:func:`claimfsm.engine.version.session_version`). Like the hold, a rewind takes it from
its target."""

#: (due time as a sortable UTC string or ``None``, whether the session holds, when its
#: hold began as a sortable UTC string or ``None``: the review queue's order).
Timer = tuple[str | None, bool, str | None]


def hold_of(state: SessionState) -> dict[str, Any] | None:
    """The session's hold when it holds in its current state, else ``None``."""
    hold = state.runtime.get(HOLD_KEY) if state.runtime else None
    if not isinstance(hold, dict) or hold.get("state") != state.fsm:
        return None
    return hold


def status_of(state: SessionState, finals: frozenset[str] | None = None) -> str:
    """``WAITING`` for a session that holds; ``FINISHED`` in a final state when
    ``finals`` is known; else ``RUNNING``."""
    if hold_of(state) is not None:
        return "WAITING"
    if finals is not None and state.fsm in finals:
        return "FINISHED"
    return "RUNNING"


def due_key(ts: str) -> str:
    """An ISO timestamp as a string that sorts as time does (UTC, microseconds)."""
    moment = datetime.fromisoformat(ts)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds")


def timer_of(state: SessionState) -> Timer | None:
    """The session's due time and whether it holds, or ``None`` when neither (the
    usual case: nothing for a store to index)."""
    hold = hold_of(state)
    due: str | None = None
    if hold is not None and hold.get("until"):
        due = due_key(str(hold["until"]))
    retry = state.retry
    if retry is not None and retry.next_at and retry.state == state.fsm:
        at = due_key(retry.next_at)
        due = at if due is None else min(due, at)
    if hold is None and due is None:
        return None
    return due, hold is not None, since_key(hold)


def since_key(hold: dict[str, Any] | None) -> str | None:
    """When ``hold`` began, as a string that sorts as time does (the review queue's
    order: a session keeps its place while a person edits it); a ``since`` that is not
    a timestamp sorts as it is written."""
    if hold is None or not hold.get("since"):
        return None
    try:
        return due_key(str(hold["since"]))
    except ValueError:
        return str(hold["since"])


def timer_change(old: SessionState | None, new: SessionState) -> tuple[bool, Timer | None]:
    """Whether a commit from ``old`` to ``new`` changes the session's timer, and the new
    one. The usual step (no retry, no hold on either side) is two field tests."""
    if (old is not None and old.retry is None and new.retry is None
            and HOLD_KEY not in old.runtime and HOLD_KEY not in new.runtime):
        return False, None
    before = timer_of(old) if old is not None else None
    after = timer_of(new)
    return before != after, after


def due_sessions(sids: Iterable[str], head: Callable[[str], Revision], now: str,
                 limit: int) -> list[str]:
    """The generic scan behind ``StateStore.due``: sessions due at ``now`` (a
    :func:`due_key`), earliest first, at most ``limit``."""
    found: list[tuple[str, str]] = []
    for sid in sids:
        timer = timer_of(head(sid).state)
        if timer is not None and timer[0] is not None and timer[0] <= now:
            found.append((timer[0], sid))
    return [sid for _, sid in sorted(found)[:limit]]


def waiting_json(state: SessionState) -> dict[str, Any] | None:
    """What a holding session waits for, for ``show``/``sessions``/the API."""
    hold = hold_of(state)
    if hold is None:
        return None
    out = {"kind": hold["kind"], "state": hold["state"], "since": hold.get("since")}
    if hold["kind"] == "input":
        out.update(input=hold.get("input"), until=hold.get("until"),
                   on_timeout=hold.get("on_timeout"))
    else:
        out.update(when=hold.get("when"))
    return out
