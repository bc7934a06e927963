"""The PostgreSQL side of the session catalog (:mod:`claimfsm.state.catalog`): ``st_catalog``
holds each session's claim and its head's verdict label, written in the same statement
as the session's creation and as the commit that changes the verdict (see
:mod:`claimfsm.state.postgres.db`). A page is one query: newest first by session id, keyset
paged, filters in SQL, and the state and last update read from the head row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from claimfsm.state.catalog import SessionSummary, SummaryPage, SummaryQuery, sql_filters
from claimfsm.state.model import Revision
from claimfsm.state.postgres.db import listed

__all__ = ["fill_catalog", "list_page"]

_PAGE = (
    "SELECT s.id, s.sid, s.head, r.fsm, r.ts, c.claim, c.verdict"
    " FROM st_sessions s JOIN st_revisions r ON r.session = s.id AND r.rev = s.head"
    " JOIN st_catalog c ON c.id = s.id"
)


def fill_catalog(conn: psycopg.Connection[Any], head: Callable[[str], Revision]) -> bool:
    """List the sessions a database from before the catalog has (once); ``False`` when
    it has no catalog table to fill (opened read-only)."""
    if conn.execute("SELECT to_regclass('st_catalog') IS NULL").fetchone() == (True,):
        return False
    missing = conn.execute(
        "SELECT s.id, s.sid FROM st_sessions s LEFT JOIN st_catalog c ON c.id = s.id"
        " WHERE c.id IS NULL AND s.head >= 0 ORDER BY s.id").fetchall()
    for session, sid in missing:
        conn.execute("INSERT INTO st_catalog (id, claim, verdict) VALUES (%s, %s, %s)"
                     " ON CONFLICT (id) DO NOTHING", (session, *listed(head(sid).state)))
    return True


def list_page(conn: psycopg.Connection[Any], query: SummaryQuery) -> SummaryPage:
    """One page of ``query``."""
    where, params = sql_filters(query, mark="%s", like="ILIKE")
    sql = _PAGE + where + " ORDER BY s.id DESC LIMIT %s"
    rows = conn.execute(sql, (*params, query.limit + 1)).fetchall()
    items = [SessionSummary(seq=seq, sid=sid, claim=claim, fsm=fsm, verdict=verdict,
                            revisions=rev + 1, updated=ts)
             for seq, sid, rev, fsm, ts, claim, verdict in rows[: query.limit]]
    return SummaryPage(items=items, next=items[-1].seq if len(rows) > query.limit else None)
