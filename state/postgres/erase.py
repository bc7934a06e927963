"""Deleting sessions from a PostgreSQL store (retention and erasure; docs/operations.md).

One transaction per call: the sessions' ``st_sessions`` rows are locked first (``FOR
UPDATE``), so a worker's commit to one of them waits and then finds it deleted
(``head = -1``: the row stays, rowless, so the id stays taken, as on SQLite); their
revisions and listing rows go, a tombstone each goes into ``st_tombstones``, and with
``sweep`` the blobs no remaining row references go too. Forks are copies with rows of
their own and blobs are shared by hash, so nothing has to be copied first.

``compact`` after a deletion rewrites the tables (``VACUUM FULL``), so the deleted rows'
bytes leave the table files; the server's write-ahead log and its backups keep them
until they are recycled (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import psycopg

from claimfsm.state.postgres.core import PostgresCore
from claimfsm.state.postgres.db import retrying
from claimfsm.state.postgres.verify import prune_blobs
from claimfsm.state.tombstone import EndedSession, EraseReport, Tombstone

__all__ = ["PostgresErase"]

_ENDED = (
    "SELECT s.sid, s.head, r.fsm, r.ts FROM st_sessions s"
    " JOIN st_revisions r ON r.session = s.id AND r.rev = s.head"
    " WHERE r.fsm = ANY(%s) ORDER BY s.id"
)


def _erase(conn: psycopg.Connection[Any], heads: Mapping[str, int | None], actor: str,
           at: str, sweep: bool) -> EraseReport:
    found = {sid: (session, head) for session, sid, head in conn.execute(
        "SELECT id, sid, head FROM st_sessions WHERE sid = ANY(%s) ORDER BY id FOR UPDATE",
        (list(heads),)).fetchall()}
    skipped: dict[str, str] = {}
    chosen: dict[int, str] = {}
    for sid, expected in heads.items():
        session, head = found.get(sid, (None, -1))
        if session is None or head < 0:
            skipped[sid] = "gone"
        elif expected is not None and head != expected:
            skipped[sid] = "moved"
        else:
            chosen[session] = sid
    if not chosen:
        return EraseReport(skipped=skipped)
    ids = list(chosen)
    at_head = conn.execute(
        "SELECT s.id, s.head, r.fsm, r.hash FROM st_sessions s JOIN st_revisions r"
        " ON r.session = s.id AND r.rev = s.head WHERE s.id = ANY(%s) ORDER BY s.id",
        (ids,)).fetchall()
    conn.execute("DELETE FROM st_revisions WHERE session = ANY(%s)", (ids,))
    conn.execute("DELETE FROM st_catalog WHERE id = ANY(%s)", (ids,))
    if conn.execute("SELECT to_regclass('st_answers') IS NOT NULL").fetchone() == (True,):
        # A deleted session's unfinished step may have saved answers (state/answers.py):
        # they hold its queries, so they go with it.
        conn.execute("DELETE FROM st_answers WHERE sid = ANY(%s)", (list(chosen.values()),))
    conn.execute("UPDATE st_sessions SET head = -1 WHERE id = ANY(%s)", (ids,))
    stones = [Tombstone(sid=chosen[session], deleted_at=at, actor=actor, head=head, fsm=fsm,
                        last_hash=bytes(digest).hex())
              for session, head, fsm, digest in at_head]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO st_tombstones (id, sid, deleted_at, actor, head, fsm, hash)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [(session, t.sid, at, actor, t.head, t.fsm, bytes.fromhex(t.last_hash or ""))
             for (session, *_), t in zip(at_head, stones, strict=True)])
    conn.execute("INSERT INTO st_meta VALUES ('erased', '1')"
                 " ON CONFLICT (key) DO UPDATE SET value = '1'")
    dropped = prune_blobs(conn) if sweep else 0
    return EraseReport(tombstones=stones, skipped=skipped, blobs_dropped=dropped)


class PostgresErase(PostgresCore):
    """The retention half of :class:`~claimfsm.state.postgres.store.PostgresStore`."""

    def erase(self, heads: Mapping[str, int | None], *, actor: str, at: str,
              sweep: bool = True) -> EraseReport:
        """Delete sessions in one transaction (see :meth:`StateStore.erase`)."""

        def run() -> EraseReport:
            with self._lock, self._conn.transaction():
                return _erase(self._conn, heads, actor, at, sweep)

        report = retrying(run)
        if report.tombstones:
            for stone in report.tombstones:
                self._ids.pop(stone.sid, None)
            self.clear_cache()
            if report.blobs_dropped:
                self._known.clear()
        return report

    def tombstones(self) -> Sequence[Tombstone]:
        """Every tombstone, oldest deletion first."""
        if self._query("SELECT to_regclass('st_tombstones') IS NULL") == [(True,)]:
            return []  # a database from before deletions, opened read-only
        return [Tombstone(sid=sid, deleted_at=at, actor=actor, head=head, fsm=fsm,
                          last_hash=bytes(digest).hex())
                for sid, at, actor, head, fsm, digest in self._query(
                    "SELECT sid, deleted_at, actor, head, fsm, hash FROM st_tombstones"
                    " ORDER BY deleted_at, id")]

    def ended(self, states: Collection[str]) -> Sequence[EndedSession]:
        """Live sessions whose head is in ``states``: one query over the head rows."""
        rows = self._query(_ENDED, (sorted(states),))
        return [EndedSession(sid, head, fsm, ts) for sid, head, fsm, ts in rows]

    def sweep_blobs(self) -> int:
        """Drop unreferenced blobs (one transaction)."""

        def run() -> int:
            with self._lock, self._conn.transaction():
                return prune_blobs(self._conn)

        dropped = retrying(run)
        if dropped:
            self._known.clear()
        return dropped

    def _reclaim(self) -> bool:
        """After a deletion: rewrite the tables so the deleted rows leave their files."""
        if self._query("SELECT 1 FROM st_meta WHERE key = 'erased'") == []:
            return False

        def run() -> None:
            with self._lock:
                # VACUUM cannot run inside a transaction: the connection is autocommit.
                self._conn.execute("VACUUM FULL st_revisions, st_blobs, st_catalog")
                self._conn.execute("DELETE FROM st_meta WHERE key = 'erased'")

        retrying(run)
        return True
