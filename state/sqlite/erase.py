"""Deleting sessions from a SQLite store (retention and erasure; docs/operations.md).

A deleted session's revisions (its events are in them) and listing row go in one write
transaction, which also writes its tombstone into ``st_tombstones`` and, when asked,
drops the blobs no remaining row references. Its ``st_sessions`` row stays, rowless:
the session number is never given to another session, so a process that still holds
the number (another worker's cache) can never read or write someone else's rows, and
the id stays taken. A fork that shares the deleted session's rows (state/sqlite/shares.py)
gets a verbatim copy of them first, in the same transaction; forks from before schema 7
are copies with rows of their own. Blobs are shared by hash, and a blob another row
references is kept.

Deleted rows leave their bytes in free pages and in the write-ahead log until
``compact``, which rebuilds the file (``VACUUM``) and empties the log when a deletion
happened since its last run (``st_meta`` key ``erased``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence

from claimfsm.state.sqlite.core import SQLiteCore
from claimfsm.state.sqlite.db import HEAD, retrying
from claimfsm.state.sqlite.maintenance import prune_blobs
from claimfsm.state.sqlite.shares import inline_shares
from claimfsm.state.sqlite.stamp import session_ts
from claimfsm.state.tombstone import EndedSession, EraseReport, Tombstone

__all__ = ["LIVE", "SQLiteErase"]

_MAX = 0xFFFFFFFF
#: A condition on ``st_sessions s``: the session has rows (it was not deleted).
LIVE = ("EXISTS (SELECT 1 FROM st_revisions"
        " WHERE k BETWEEN s.id << 32 AND (s.id << 32) + 4294967295)")
_FIND = f"SELECT id, {HEAD.replace('?1', '(id << 32)')} FROM st_sessions WHERE sid = ?"
_HEAD_ROW = "SELECT fsm, hash FROM st_revisions WHERE k = ?"
_STONE = ("INSERT INTO st_tombstones (id, sid, deleted_at, actor, head, fsm, hash)"
          " VALUES (?, ?, ?, ?, ?, ?, ?)")
_ENDED = (
    "SELECT s.sid, r.k & 4294967295, r.fsm, r.ts FROM st_sessions s"
    f" JOIN st_revisions r ON r.k = {HEAD.replace('?1', '(s.id << 32)')}"
    " WHERE r.fsm IN ({}) ORDER BY s.id"
)


def _erase(c: sqlite3.Connection, heads: Sequence[tuple[str, int | None]], actor: str,
           at: str, sweep: bool) -> EraseReport:
    stones: list[Tombstone] = []
    skipped: dict[str, str] = {}
    for sid, expected in heads:
        found = c.execute(_FIND, (sid,)).fetchone()
        if found is None or found[1] is None:
            skipped[sid] = "gone"
            continue
        session, k = found
        head = k & _MAX
        if expected is not None and head != expected:
            skipped[sid] = "moved"
            continue
        fsm, digest = c.execute(_HEAD_ROW, (k,)).fetchone()
        base = session << 32
        inline_shares(c, session)  # its forks keep the rows they share with it
        c.execute("DELETE FROM st_revisions WHERE k BETWEEN ? AND ?", (base, base + _MAX))
        c.execute("DELETE FROM st_catalog WHERE id = ?", (session,))
        c.execute(_STONE, (session, sid, at, actor, head, fsm, digest))
        stones.append(Tombstone(sid=sid, deleted_at=at, actor=actor, head=head, fsm=fsm,
                                last_hash=bytes(digest).hex()))
    dropped = 0
    if stones:
        # A deleted session's unfinished step may have saved answers (state/answers.py):
        # they hold its queries, so they go with it.
        if c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                     " AND name = 'st_answers'").fetchone() is not None:
            c.executemany("DELETE FROM st_answers WHERE sid = ?",
                          [(stone.sid,) for stone in stones])
        c.execute("INSERT OR REPLACE INTO st_meta VALUES ('erased', '1')")
        if sweep:
            dropped = prune_blobs(c)
    return EraseReport(tombstones=stones, skipped=skipped, blobs_dropped=dropped)


def _tombstones(c: sqlite3.Connection) -> list[Tombstone]:
    if c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'st_tombstones'"
                 ).fetchone() is None:
        return []  # a file from before deletions, opened read-only
    return [Tombstone(sid=sid, deleted_at=at, actor=actor, head=head, fsm=fsm,
                      last_hash=bytes(digest).hex())
            for sid, at, actor, head, fsm, digest in c.execute(
                "SELECT sid, deleted_at, actor, head, fsm, hash FROM st_tombstones"
                " ORDER BY deleted_at, id")]


class SQLiteErase(SQLiteCore):
    """The retention half of :class:`~claimfsm.state.sqlite.store.SQLiteStore`."""

    def erase(self, heads: Mapping[str, int | None], *, actor: str, at: str,
              sweep: bool = True) -> EraseReport:
        """Delete sessions in one transaction (see :meth:`StateStore.erase`)."""
        targets = list(heads.items())
        report = self._write(lambda c: _erase(c, targets, actor, at, sweep))
        if report.tombstones:
            # Revisions were thought never to change, so the caches never expire: forget
            # the deleted sessions' (and, after a sweep, which blobs are in the file).
            for stone in report.tombstones:
                self._ids.pop(stone.sid, None)
            self.clear_cache()
            self._shared.clear()
            if report.blobs_dropped:
                self._known.clear()
        return report

    def tombstones(self) -> Sequence[Tombstone]:
        """Every tombstone, oldest deletion first."""
        return self._read(_tombstones)

    def ended(self, states: Collection[str]) -> Sequence[EndedSession]:
        """Live sessions whose head is in ``states``: one query over the head rows."""
        names = sorted(states)
        if not names:
            return []
        sql = _ENDED.format(", ".join("?" * len(names)))
        rows = self._read(lambda c: c.execute(sql, names).fetchall())
        return [EndedSession(sid, head, fsm, session_ts(ts, sid))
                for sid, head, fsm, ts in rows]

    def sweep_blobs(self) -> int:
        """Drop unreferenced blobs (one transaction)."""
        dropped: int = self._write(prune_blobs)
        if dropped:
            self._known.clear()
        return dropped

    def _reclaim(self) -> bool:
        """After a deletion: rebuild the file and empty the write-ahead log, so no byte
        of a deleted session is left in either. Whether it ran."""
        if self.readonly or self._closed:
            return False
        flagged = self._read(lambda c: c.execute(
            "SELECT 1 FROM st_meta WHERE key = 'erased'").fetchone())
        if flagged is None:
            return False
        with self._lock, self._queue:
            conn = self._writer()
            retrying(lambda: conn.execute("VACUUM"), self._budget)
            conn.execute("DELETE FROM st_meta WHERE key = 'erased'")
            retrying(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone(),
                     self._budget)
        return True
