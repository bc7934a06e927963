"""The SQLite side of the session catalog (:mod:`state.catalog`).

``st_catalog`` (created with the other tables in :mod:`state.sqlite.db`) holds what a
listing needs but a revision row does not carry as a column: the claim (written when a
session is created or forked) and the head's verdict label (written by the commit that
changes it, in the same transaction). The state and the last
update come from the head row itself (``st_sessions.head`` -> ``st_revisions``), so a page
is one indexed query, newest first by session id (keyset paging: no scan per page).

Files written before the catalog existed get the table on their first writable open; a
session it does not list yet is read from its head once and added (or, read-only, just
read).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from state.catalog import (
    SessionSummary,
    SummaryPage,
    SummaryQuery,
    matches,
    sql_filters,
    summary_of,
)
from state.model import Revision

__all__ = ["ADD_SESSION", "SET_VERDICT", "has_catalog", "list_page", "missing_ids"]

ADD_SESSION = "INSERT OR REPLACE INTO st_catalog (id, claim, verdict) VALUES (?, ?, ?)"
SET_VERDICT = "UPDATE st_catalog SET verdict = ? WHERE id = ?"

_PAGE = (
    "SELECT s.id, s.sid, s.head, r.fsm, r.ts, c.claim, c.verdict"
    " FROM st_sessions s JOIN st_revisions r ON r.k = (s.id << 32) | s.head"
    " LEFT JOIN st_catalog c ON c.id = s.id"
)
# A read-only file from before the catalog has no table to join.
_PAGE_BARE = (
    "SELECT s.id, s.sid, s.head, r.fsm, r.ts, NULL, NULL"
    " FROM st_sessions s JOIN st_revisions r ON r.k = (s.id << 32) | s.head"
)

#: Reads a session's head by its sid (the store's own cached decoder).
HeadReader = Callable[[str], Revision]


def has_catalog(conn: sqlite3.Connection) -> bool:
    """Whether the file has the catalog table (read-only files from before it do not)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table'"
                        " AND name='st_catalog'").fetchone() is not None


def missing_ids(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Sessions the catalog does not list yet (files from before it existed)."""
    if not has_catalog(conn):
        return conn.execute("SELECT id, sid FROM st_sessions ORDER BY id").fetchall()
    return conn.execute(
        "SELECT s.id, s.sid FROM st_sessions s LEFT JOIN st_catalog c ON c.id = s.id"
        " WHERE c.id IS NULL ORDER BY s.id"
    ).fetchall()


def list_page(conn: sqlite3.Connection, query: SummaryQuery, head: HeadReader,
              complete: bool) -> SummaryPage:
    """One page of ``query``. ``complete`` says every session is in the catalog, so the
    claim and verdict filters can run in SQL; otherwise rows the catalog lacks are read
    from their heads and filtered here."""
    # LIKE is case-insensitive for ASCII only; ``matches`` below settles the rest.
    where, params = sql_filters(query, mark="?", like="LIKE", catalog=complete)
    base = _PAGE if complete or has_catalog(conn) else _PAGE_BARE
    sql = base + where + " ORDER BY s.id DESC"
    items: list[SessionSummary] = []
    for seq, sid, rev, fsm, ts, claim, verdict in conn.execute(sql, params):
        if claim is None:
            summary = summary_of(seq, head(sid))
        else:
            summary = SessionSummary(seq=seq, sid=sid, claim=claim, fsm=fsm, verdict=verdict,
                                     revisions=rev + 1, updated=ts)
        if matches(query, summary):
            items.append(summary)
            if len(items) > query.limit:
                break
    more = len(items) > query.limit
    items = items[: query.limit]
    return SummaryPage(items=items, next=items[-1].seq if more else None)
