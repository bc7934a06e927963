"""The SQLite side of the review queue (:mod:`claimfsm.state.queue`): one query that
starts from ``st_timers`` (a row per session that waits or is due) and reaches each head
row and catalog row by key. A claim the catalog has not listed yet is read from the
session's revision 0 and written back when the store may write, as the sessions listing
does (:mod:`claimfsm.state.sqlite.catalog`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from claimfsm.state.model import Revision
from claimfsm.state.queue import WaitingItem, WaitingPage, WaitingQuery, page_of, queue_filters
from claimfsm.state.sqlite.db import HEAD
from claimfsm.state.sqlite.stamp import session_ts

__all__ = ["waiting_page"]

_CLAIM = ("INSERT INTO st_catalog (id, claim) VALUES (?, ?)"
          " ON CONFLICT (id) DO UPDATE SET claim = excluded.claim")
# CROSS JOIN keeps st_timers the outer loop: the planner must not walk every session.
_PAGE = (
    "SELECT s.id, s.sid, r.k & 4294967295, r.fsm, r.ts, c.claim, c.verdict, t.since"
    " FROM st_timers t CROSS JOIN st_sessions s ON s.id = t.id"
    f" CROSS JOIN st_revisions r ON r.k = {HEAD.replace('?1', '(s.id << 32)')}"
    " LEFT JOIN st_catalog c ON c.id = s.id WHERE t.waiting = 1"
)

Run = Callable[[Callable[[sqlite3.Connection], Any]], Any]


def has_timers(c: sqlite3.Connection) -> bool:
    """Whether the file has ``st_timers`` with the queue's index on ``since`` (a file
    from before them, opened read-only, has not: it is scanned)."""
    return c.execute("SELECT 1 FROM sqlite_master WHERE type='index'"
                     " AND name='st_timers_queue'").fetchone() is not None


def waiting_page(read: Run, write: Run | None, first: Callable[[str], Revision],
                 query: WaitingQuery) -> WaitingPage:
    """A page of ``query``; ``write`` is ``None`` while the store may not write."""
    where, params = queue_filters(query, "?")
    sql = _PAGE + where + " ORDER BY t.since, t.id LIMIT ?"
    filled: list[tuple[int, str]] = []

    def run(c: sqlite3.Connection) -> list[WaitingItem]:
        out = []
        for seq, sid, rev, fsm, ts, claim, verdict, since in c.execute(
                sql, (*params, query.limit + 1)):
            if claim is None:
                claim = first(sid).state.claim
                filled.append((seq, claim))
            out.append(WaitingItem(seq=seq, sid=sid, claim=claim, fsm=fsm, verdict=verdict,
                                   revisions=rev + 1, updated=session_ts(ts, sid),
                                   since=since or ""))
        return out

    items = read(run)
    if filled and write is not None:
        write(lambda c: c.executemany(_CLAIM, filled))
    return page_of(items, query.limit)
