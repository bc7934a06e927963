"""The PostgreSQL side of the session catalog (:mod:`claimfsm.state.catalog`): ``st_catalog``
holds each session's claim and its head's verdict label, written in the same statement
as the session's creation and as the commit that changes the verdict (see
:mod:`claimfsm.state.postgres.db`). A page is one query: newest first by session id, keyset
paged, filters in SQL, and the state and last update read from the head row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from claimfsm.state.catalog import SessionSummary, SummaryPage, SummaryQuery, sql_filters, status
from claimfsm.state.holds import due_sessions, timer_of
from claimfsm.state.lineage import link_of
from claimfsm.state.model import Revision
from claimfsm.state.postgres.db import listed

__all__ = ["due_page", "fill_catalog", "fill_forks", "fill_timers", "fork_rows", "list_page"]

_PAGE = (
    "SELECT s.id, s.sid, s.head, r.fsm, r.ts, c.claim, c.verdict, t.waiting"
    " FROM st_sessions s JOIN st_revisions r ON r.session = s.id AND r.rev = s.head"
    " JOIN st_catalog c ON c.id = s.id LEFT JOIN st_timers t ON t.id = s.id"
)
_FORKS = ("SELECT s.sid, c.parent_rev, c.forked FROM st_catalog c JOIN st_sessions s"
          " ON s.id = c.id WHERE c.parent = %s AND s.head >= 0 ORDER BY c.id LIMIT %s")
_DUE = ("SELECT s.sid FROM st_timers t JOIN st_sessions s ON s.id = t.id"
        " WHERE t.due IS NOT NULL AND t.due <= %s ORDER BY t.due, t.id LIMIT %s")


def fill_catalog(conn: psycopg.Connection[Any], head: Callable[[str], Revision]) -> bool:
    """List the sessions a database from before the catalog has (once); ``False`` when
    it has no catalog table to fill (opened read-only)."""
    if conn.execute("SELECT to_regclass('st_catalog') IS NULL OR to_regclass('st_timers')"
                    " IS NULL").fetchone() == (True,):
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
                            revisions=rev + 1, updated=ts, status=status(fsm, bool(waiting)))
             for seq, sid, rev, fsm, ts, claim, verdict, waiting in rows[: query.limit]]
    return SummaryPage(items=items, next=items[-1].seq if len(rows) > query.limit else None)


def fill_timers(conn: psycopg.Connection[Any], head: Callable[[str], Revision]) -> bool:
    """Whether ``st_timers`` answers for every session: a database from before timers (or
    before the queue's ``since``) is filled first, each session's head read once; one
    without the table (opened read-only) is not (the caller scans)."""
    if conn.execute("SELECT to_regclass('st_timers_queue') IS NULL").fetchone() == (True,):
        return False
    if conn.execute("SELECT 1 FROM st_meta WHERE key = 'timers'").fetchone() is not None:
        with conn.transaction():
            for session, sid in conn.execute("SELECT id, sid FROM st_sessions ORDER BY id"
                                             ).fetchall():
                timer = timer_of(head(sid).state)
                if timer is not None:
                    conn.execute("INSERT INTO st_timers (id, due, waiting, since)"
                                 " VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE"
                                 " SET due = excluded.due, waiting = excluded.waiting,"
                                 " since = excluded.since",
                                 (session, timer[0], int(timer[1]), timer[2]))
            conn.execute("DELETE FROM st_meta WHERE key = 'timers'")
    return True


def due_page(conn: psycopg.Connection[Any], head: Callable[[str], Revision], now: str,
             limit: int) -> list[str]:
    """Sessions due at ``now``, earliest first, from ``st_timers`` (:func:`fill_timers`);
    a database without the table (opened read-only) is scanned."""
    if not fill_timers(conn, head):
        sids = [sid for (sid,) in conn.execute("SELECT sid FROM st_sessions ORDER BY id")]
        return due_sessions(sids, head, now, limit)
    return [sid for (sid,) in conn.execute(_DUE, (now, limit)).fetchall()]


def fill_forks(conn: psycopg.Connection[Any], sids: Sequence[str],
               heads: Callable[[Sequence[str]], dict[str, Revision]]) -> bool:
    """Whether ``st_catalog.parent`` answers for every fork: a database from before the
    forks index is filled first (every head read once, by 500); one opened read-only
    without the column is not (the caller scans)."""
    if conn.execute("SELECT to_regclass('st_catalog_parent') IS NULL").fetchone() == (True,):
        return False
    if conn.execute("SELECT 1 FROM st_meta WHERE key = 'forks'").fetchone() is not None:
        rows = []
        for start in range(0, len(sids), 500):
            for sid, head in heads(sids[start: start + 500]).items():
                link = link_of(head)
                if link is not None and isinstance(link.get("rev"), int):
                    rows.append((str(link.get("sid", "")), link["rev"],
                                 str(link.get("at", head.ts)), sid))
        with conn.transaction():
            with conn.cursor() as cur:
                cur.executemany("UPDATE st_catalog SET parent = %s, parent_rev = %s,"
                                " forked = %s WHERE id = (SELECT id FROM st_sessions"
                                " WHERE sid = %s)", rows)
            conn.execute("DELETE FROM st_meta WHERE key = 'forks'")
    return True


def fork_rows(conn: psycopg.Connection[Any], sid: str, limit: int) -> list[dict[str, Any]]:
    """The forks of ``sid`` from the index: ``{"sid", "rev", "at"}``, oldest first."""
    return [{"sid": name, "rev": rev, "at": at}
            for name, rev, at in conn.execute(_FORKS, (sid, limit)).fetchall()]
