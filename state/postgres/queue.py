"""The PostgreSQL side of the review queue (:mod:`claimfsm.state.queue`): one query that
walks ``st_timers``' index on when each waiting session's hold began (a row per session
that waits or is due) and reaches each session, its head row and its catalog row by
key."""

from __future__ import annotations

from typing import Any

import psycopg

from claimfsm.state.queue import WaitingItem, WaitingPage, WaitingQuery, page_of, queue_filters

__all__ = ["waiting_page"]

_PAGE = (
    "SELECT s.id, s.sid, s.head, r.fsm, r.ts, c.claim, c.verdict, t.since"
    " FROM st_timers t JOIN st_sessions s ON s.id = t.id"
    " JOIN st_revisions r ON r.session = s.id AND r.rev = s.head"
    " JOIN st_catalog c ON c.id = s.id WHERE t.waiting = 1"
)


def waiting_page(conn: psycopg.Connection[Any], query: WaitingQuery) -> WaitingPage:
    """A page of ``query``."""
    where, params = queue_filters(query, "%s")
    sql = _PAGE + where + " ORDER BY t.since, t.id LIMIT %s"
    rows = conn.execute(sql, (*params, query.limit + 1)).fetchall()
    items = [WaitingItem(seq=seq, sid=sid, claim=claim, fsm=fsm, verdict=verdict,
                         revisions=rev + 1, updated=ts, since=since or "")
             for seq, sid, rev, fsm, ts, claim, verdict, since in rows]
    return page_of(items, query.limit)
