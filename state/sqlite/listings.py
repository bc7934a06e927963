"""The session listings a SQLite store answers from its index tables: summaries from the
catalog, a session's forks, sessions due, the review queue. Each loads its module on
first use (a store that only runs sessions never imports them), so this part of
:class:`~claimfsm.state.sqlite.store.SQLiteStore` is only the hand-over to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claimfsm.state.lineage import check_limit
from claimfsm.state.sqlite.core import SQLiteCore
from claimfsm.state.store import StateStore

if TYPE_CHECKING:
    from claimfsm.state.catalog import SummaryPage, SummaryQuery
    from claimfsm.state.queue import WaitingPage, WaitingQuery

__all__ = ["SQLiteListings"]


class SQLiteListings(SQLiteCore, StateStore):
    """Listings (see :class:`claimfsm.state.sqlite.store.SQLiteStore`); a
    :class:`~claimfsm.state.store.StateStore` for the reads they are given (``head``,
    ``get``, ``sessions``, ``heads``)."""

    def summaries(self, query: SummaryQuery) -> SummaryPage:
        """A page of session summaries from the catalog (one indexed query)."""
        if self._catalog is None:
            from claimfsm.state.sqlite.catalog import CatalogReader  # loads when listing

            self._catalog = CatalogReader(
                read=self._read, write=self._write, head=self.head,
                first=lambda sid: self.get(sid, 0), sessions=self.sessions,
                readonly=self._conn is None)  # until a write opened the file for writing
        page: SummaryPage = self._catalog.page(query)
        return page

    def forks(self, sid: str, limit: int = 100) -> list[dict[str, Any]]:
        """The forks of ``sid`` from the index on ``st_catalog.parent``
        (state/sqlite/forks.py)."""
        from claimfsm.state.sqlite.forks import forks_page  # loads when asked

        return forks_page(self._read, None if self._conn is None else self._write,
                          self.sessions, self.heads, sid, check_limit(limit))

    def due(self, now: str, limit: int = 1000) -> list[str]:
        """Sessions due at ``now``, from the index on due time (state/sqlite/timers.py)."""
        from claimfsm.state.sqlite.timers import due_page  # loads when ticking

        return due_page(self._read, self._write, self.head, self.sessions,
                        self._conn is None, now, limit)

    def waiting(self, query: WaitingQuery) -> WaitingPage:
        """A page of the review queue from ``st_timers`` (state/sqlite/queue.py)."""
        from claimfsm.state.catalog import SummaryQuery
        from claimfsm.state.queue import scan_waiting
        from claimfsm.state.sqlite.queue import has_timers, waiting_page  # loads when queued
        from claimfsm.state.sqlite.timers import ready

        if self._catalog is None or not self._catalog.ready:
            self.summaries(SummaryQuery(limit=1))  # fills an old file's catalog once
        if (not self._read(has_timers) or not self._catalog or not self._catalog.ready
                or not ready(self._read, self._write, self.head, self.readonly)):
            return scan_waiting(self.sessions(), self.head, query)  # read-only, from before
        return waiting_page(self._read, None if self._conn is None else self._write,
                            lambda sid: self.get(sid, 0), query)
