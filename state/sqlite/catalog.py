"""The SQLite side of the session catalog (:mod:`claimfsm.state.catalog`).

A listing needs each session's claim, state, verdict, revision count and last update.
The state and the last update are columns of the head row (the session's last key in
``st_revisions``); ``st_catalog`` (created with the other tables in
:mod:`claimfsm.state.sqlite.db`) holds the rest, written so that a step costs nothing extra:

- the verdict label, by the commit that changes it (in the same transaction; a session
  without a row has no verdict), so a step that leaves the verdict alone writes nothing;
- the claim, filled by the first listing that shows the session (read from its revision
  0, then written back when the store may write), so creating a session writes nothing
  either and the file stays as small as it was.

A page is one query over the sessions table newest first (keyset paging: ``s.id <
before``), joined to each head row and the catalog by key. Files from before the catalog
are marked when the table is added, and the first listing that may write reads their
sessions' heads once for the verdicts; read-only, such a file is listed from the heads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from claimfsm.state.catalog import (
    SessionSummary,
    SummaryPage,
    SummaryQuery,
    matches,
    scan_summaries,
    sql_filters,
    status,
    verdict_label,
)
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.db import HEAD
from claimfsm.state.sqlite.stamp import session_ts

__all__ = ["CatalogReader"]
_CLAIM = ("INSERT INTO st_catalog (id, claim) VALUES (?, ?)"
          " ON CONFLICT (id) DO UPDATE SET claim = excluded.claim")
_PAGE = (
    "SELECT s.id, s.sid, r.k & 4294967295, r.fsm, r.ts, c.claim, c.verdict, t.waiting"
    f" FROM st_sessions s JOIN st_revisions r ON r.k = {HEAD.replace('?1', '(s.id << 32)')}"
    " LEFT JOIN st_catalog c ON c.id = s.id LEFT JOIN st_timers t ON t.id = s.id"
)

Read = Callable[[Callable[[sqlite3.Connection], Any]], Any]


@dataclass
class CatalogReader:
    """Listings for one store: ``read``/``write`` run a function on its connection,
    ``head`` and ``first`` read a session's head and revision 0 (the store's cached
    decoder), ``readonly`` says whether anything may be written back."""

    read: Read
    write: Read
    head: Callable[[str], Revision]
    first: Callable[[str], Revision]
    sessions: Callable[[], Any]
    readonly: bool
    ready: bool = False

    def page(self, query: SummaryQuery) -> SummaryPage:
        """One page of ``query``."""
        if not self.ready and not self._prepare():
            return scan_summaries(self.sessions(), self.head, query)
        where, params = sql_filters(query, mark="?", like="LIKE", lazy_claims=True)
        sql = _PAGE + where + " ORDER BY s.id DESC"
        filled: list[tuple[int, str]] = []

        def run(c: sqlite3.Connection) -> list[SessionSummary]:
            out: list[SessionSummary] = []
            for seq, sid, rev, fsm, ts, claim, verdict, waiting in c.execute(sql, params):
                if claim is None:
                    claim = self.first(sid).state.claim
                    filled.append((seq, claim))
                summary = SessionSummary(seq=seq, sid=sid, claim=claim, fsm=fsm,
                                         verdict=verdict, revisions=rev + 1,
                                         updated=session_ts(ts, sid),
                                         status=status(fsm, bool(waiting)))
                if matches(query, summary):
                    out.append(summary)
                    if len(out) > query.limit:
                        break
            return out

        items = self.read(run)
        if filled and not self.readonly:
            self.write(lambda c: c.executemany(_CLAIM, filled))
        more = len(items) > query.limit
        items = items[: query.limit]
        return SummaryPage(items=items, next=items[-1].seq if more else None)

    def _prepare(self) -> bool:
        """Whether the catalog can serve listings (filling a marked old file once)."""
        state = self.read(_state)
        if state == "fill" and not self.readonly:
            rows = []
            for seq, sid in self.read(lambda c: c.execute(
                    "SELECT id, sid FROM st_sessions s WHERE EXISTS (SELECT 1 FROM"
                    " st_revisions WHERE k BETWEEN s.id << 32 AND (s.id << 32) + 4294967295)"
                    " ORDER BY id").fetchall()):
                head = self.head(sid)
                rows.append((seq, head.state.claim, verdict_label(head.state.verdict)))

            def fill(c: sqlite3.Connection) -> None:
                c.executemany("INSERT OR REPLACE INTO st_catalog (id, claim, verdict)"
                              " VALUES (?, ?, ?)", rows)
                c.execute("DELETE FROM st_meta WHERE key = 'catalog'")

            self.write(fill)
            state = "ok"
        self.ready = state == "ok"
        return self.ready


def _state(c: sqlite3.Connection) -> str:
    # "ok", "fill" (sessions from before the catalog) or "absent" (a read-only old file).
    if c.execute("SELECT count(*) FROM sqlite_master WHERE type='table' AND"
                 " name IN ('st_catalog', 'st_timers')").fetchone() != (2,):
        return "absent"
    row = c.execute("SELECT value FROM st_meta WHERE key = 'catalog'").fetchone()
    return "ok" if row is None else str(row[0])
