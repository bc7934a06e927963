"""Commits on PostgreSQL: one statement each (compare-and-set on the head, blobs, row,
catalog label and timer together), and :meth:`PostgresCommit.commit_all`, which sends a
batch of them in pipeline mode inside one transaction: every statement is sent before
any answer is read, so a batch costs one round trip to the server, not one per commit.

A commit whose compare-and-set loses (another writer moved the session) inserts nothing
and answers no row: the others of its batch land all the same. An error of the server
rolls the whole transaction back, so a kill at any point leaves each session at the
revision it had before the batch or after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
from claimfsm.state.holds import timer_change
from claimfsm.state.lineage import fork_mark
from claimfsm.state.model import Revision, verdict_label
from claimfsm.state.postgres.db import (
    COMMIT,
    COMMIT_BLOBS,
    COMMIT_BLOBS_LABEL,
    COMMIT_LABEL,
    commit_sql,
    retrying,
)
from claimfsm.state.postgres.erase import PostgresErase
from claimfsm.state.sqlite.rows import Encoded, Entry, encode_revision, packed
from claimfsm.state.store import StateStore

__all__ = ["HEAD_OF", "TIMER", "PostgresCommit"]

#: The session's head by number (what a commit that stored nothing reads).
HEAD_OF = "SELECT head FROM st_sessions WHERE id = %s"
#: A session that starts waiting (paused before its first state).
TIMER = ("INSERT INTO st_timers (id, due, waiting, since) VALUES (%s, %s, %s, %s)"
         " RETURNING id")


@dataclass(frozen=True)
class _Plan:
    sid: str
    session: int
    expected_rev: int
    revision: Revision
    encoded: Encoded
    sql: str
    params: tuple[Any, ...]


class PostgresCommit(PostgresErase):
    """The write half of :class:`~claimfsm.state.postgres.store.PostgresStore`."""

    #: Statements sent and round trips to the server by commits (``claimfsm bench tick``).
    commit_statements = 0
    commit_round_trips = 0

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Append ``revision`` if the head is still ``expected_rev``: the compare-and-set,
        the blobs and the row are one statement, so concurrent workers cannot both win.
        """
        plan = self._plan(revision, expected_rev)
        rows = self._query(plan.sql, plan.params)
        self.commit_statements += 1
        self.commit_round_trips += 1
        return self._landed(plan, rows)

    def commit_all(self, items: Sequence[tuple[Revision, int]]) -> list[Revision | StoreError]:
        """Commit each ``(revision, expected_rev)`` (one per session) in one transaction,
        pipelined (see the module docstring); in each one's place the revision or the
        :class:`RevConflict`/:class:`UnknownSession` that refused it."""
        out: list[Revision | StoreError | None] = []
        plans: list[tuple[int, _Plan]] = []
        for revision, expected_rev in items:
            try:
                plans.append((len(out), self._plan(revision, expected_rev)))
                out.append(None)
            except (RevConflict, UnknownSession) as exc:
                out.append(exc)
        if plans:
            try:
                answers = retrying(lambda: self._send([p for _, p in plans]))
            except BaseException:
                self._entries.clear()  # an outer batch may hold revisions that never landed
                raise
            for (at, plan), rows in zip(plans, answers, strict=True):
                try:
                    out[at] = self._landed(plan, rows)
                except (RevConflict, UnknownSession) as exc:
                    out[at] = exc
        return [x for x in out if x is not None]

    def _send(self, plans: list[_Plan]) -> list[list[tuple[Any, ...]]]:
        with self._lock:
            if self._closed:
                raise StoreError("store is closed")
            conn = self._conn
            with conn.pipeline(), conn.transaction():
                cursors = [conn.execute(p.sql, p.params, binary=True) for p in plans]
                answers = [cur.fetchall() for cur in cursors]
            self.commit_statements += len(plans)
            self.commit_round_trips += 1
            return answers

    def _plan(self, revision: Revision, expected_rev: int) -> _Plan:
        sid = revision.sid
        bad = StateStore._bad_move(revision, expected_rev)
        if bad is not None:
            self._session(sid)
            raise bad
        session = self._ids.get(sid) or self._session(sid)[0]
        try:
            parent = self._entry(sid, expected_rev, session)
        except UnknownRevision as exc:
            raise RevConflict(f"expected_rev {expected_rev} is ahead of the head", sid=sid,
                              expected=expected_rev) from exc
        sql, params, encoded = self._commit_plan(revision, expected_rev, session, parent)
        return _Plan(sid, session, expected_rev, revision, encoded, sql, params)

    def _commit_plan(self, revision: Revision, expected_rev: int, session: int, parent: Entry
                     ) -> tuple[str, tuple[Any, ...], Encoded]:
        """The one statement that commits ``revision`` over ``parent`` (the async store
        runs it too); it returns no row when the compare-and-set fails."""
        encoded = encode_revision(revision, parent, self.snapshot_every)
        hashes, zs, datas = self._new_blobs(encoded)
        row = (revision.rev, *packed(encoded.row))
        head = (revision.rev, session, expected_rev)
        blobs = (hashes, zs, datas) if hashes else ()
        # Most steps keep the verdict object as it was: one identity test per commit.
        old, new = parent.revision.state.verdict, revision.state.verdict
        relabel = old is not new and verdict_label(old) != verdict_label(new)
        label = (verdict_label(new),) if relabel else ()
        retime, timer = timer_change(parent.revision.state, revision.state)
        # A fork's own revision: its parent goes into the forks index in the same statement.
        mark = fork_mark(revision) if revision.events else None
        if retime or mark is not None:  # a wait or a retry starts or ends, or a fork
            sql, times = commit_sql(bool(hashes), relabel, timer, retime, mark)
            return sql, (*head, *blobs, *label, *times, *row), encoded
        sql = ((COMMIT_BLOBS_LABEL if relabel else COMMIT_BLOBS) if hashes
               else (COMMIT_LABEL if relabel else COMMIT))
        return sql, (*head, *blobs, *label, *row), encoded

    @staticmethod
    def _commit_lost(sid: str, expected_rev: int, found: list[tuple[Any, ...]]) -> None:
        """Raise what a commit that stored nothing means, ``found`` being the session's
        ``HEAD_OF`` row."""
        if not found or found[0][0] < 0:  # head -1: deleted
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        raise RevConflict(f"head is {found[0][0]}, not {expected_rev}", sid=sid,
                          head=found[0][0], expected=expected_rev)

    def _landed(self, plan: _Plan, rows: list[tuple[Any, ...]]) -> Revision:
        if not rows:
            self._commit_lost(plan.sid, plan.expected_rev,
                              self._query(HEAD_OF, (plan.session,)))
        self._remember(plan.sid, plan.encoded)
        return plan.revision
