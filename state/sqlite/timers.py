"""The SQLite side of timers (:mod:`claimfsm.state.holds`): ``st_timers`` holds a row per
session that waits for a person or is due, written by the commit that changes it, and
``claimfsm tick`` reads the sessions due by seeking its index on due time: the cost of a
tick is the due sessions, not the sessions in the store.

A file from before timers gets the table on its first writable open, marked
``timers = fill`` in ``st_meta`` when it holds sessions; a file whose table is from before
the review queue's ``since`` column gets the column, and the same mark when a session
waits. The first :func:`due_page` or queue page that may write reads their heads once.
Read-only, such a file is scanned.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from claimfsm.state.holds import Timer, due_sessions, timer_of
from claimfsm.state.model import Revision

__all__ = ["SET_TIMER", "due_page", "ready", "timer_params"]

#: Set (params: id, due, waiting, since) a session's timer.
SET_TIMER = ("INSERT INTO st_timers (id, due, waiting, since) VALUES (?, ?, ?, ?)"
             " ON CONFLICT (id) DO UPDATE SET due = excluded.due, waiting = excluded.waiting,"
             " since = excluded.since")
CLEAR_TIMER = "DELETE FROM st_timers WHERE id = ?"
_DUE = ("SELECT s.sid FROM st_timers t JOIN st_sessions s ON s.id = t.id"
        " WHERE t.due IS NOT NULL AND t.due <= ? ORDER BY t.due, t.id LIMIT ?")

Run = Callable[[Callable[[sqlite3.Connection], Any]], Any]


def timer_params(session: int, timer: Timer | None) -> tuple[str, tuple[Any, ...]]:
    """The statement and parameters that store ``timer`` for ``session``."""
    if timer is None:
        return CLEAR_TIMER, (session,)
    return SET_TIMER, (session, timer[0], int(timer[1]), timer[2])


def _state(c: sqlite3.Connection) -> str:
    if c.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='st_timers'"
                 ).fetchone() is None:
        return "absent"
    row = c.execute("SELECT value FROM st_meta WHERE key = 'timers'").fetchone()
    return "ok" if row is None else str(row[0])


def ready(read: Run, write: Run, head: Callable[[str], Revision], readonly: bool) -> bool:
    """Whether ``st_timers`` answers for every session: a file from before timers (or
    before the queue's ``since``) is filled first, reading each session's head once,
    when the store may write; read-only, it is not ready (the caller scans)."""
    state = read(_state)
    if state == "fill" and not readonly:
        rows = []
        for seq, sid in read(lambda c: c.execute(
                "SELECT id, sid FROM st_sessions ORDER BY id").fetchall()):
            timer = timer_of(head(sid).state)
            if timer is not None:
                rows.append((seq, timer[0], int(timer[1]), timer[2]))

        def fill(c: sqlite3.Connection) -> None:
            c.executemany(SET_TIMER, rows)
            c.execute("DELETE FROM st_meta WHERE key = 'timers'")

        write(fill)
        state = "ok"
    return bool(state == "ok")


def due_page(read: Run, write: Run, head: Callable[[str], Revision],
             sessions: Callable[[], Sequence[str]], readonly: bool, now: str,
             limit: int) -> list[str]:
    """Sessions due at ``now``, earliest first (see the module docstring)."""
    if not ready(read, write, head, readonly):
        return due_sessions(sessions(), head, now, limit)
    return [sid for (sid,) in read(lambda c: c.execute(_DUE, (now, limit)).fetchall())]
