"""The fork that shares its parent's rows, and its chain check: the half of
:class:`~claimfsm.state.sqlite.store.SQLiteStore` that writes and verifies what
:mod:`claimfsm.state.sqlite.shares` describes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from claimfsm.state.errors import UnknownRevision
from claimfsm.state.holds import timer_of
from claimfsm.state.lineage import fork_mark
from claimfsm.state.model import Revision, verdict_label
from claimfsm.state.sqlite.entries import SQLiteEntries
from claimfsm.state.sqlite.forks import PARENT
from claimfsm.state.sqlite.inserts import INSERT_BLOB, INSERT_ROW, LABEL, new_session
from claimfsm.state.sqlite.maintenance import read_rows, verify_rows
from claimfsm.state.sqlite.rows import bound, encode_revision
from claimfsm.state.sqlite.shares import dump_shares, restamp, segments_for, verify_shared
from claimfsm.state.sqlite.timers import timer_params
from claimfsm.state.store import ChainCheck, StateStore

__all__ = ["SQLiteSharing"]


class SQLiteSharing(SQLiteEntries):
    """Shared forks (see :meth:`SQLiteStore.fork
    <claimfsm.state.sqlite.store.SQLiteStore.fork>`)."""

    def _fork_shared(self, sid: str, at: int, new_sid: str,
                     then: Callable[[Revision], Revision]) -> Revision:
        """Fork ``sid`` at ``at`` as ``new_sid``: its segments, and ``then``'s revision
        written whole, chained onto the parent's revision ``at``; one transaction."""
        session = self._ids.get(sid)
        if session is None or self._entries.peek((sid, at)) is None:
            # Revisions are never deleted but by an erase, which the write below notices.
            session, head = self._session(sid)
            if not 0 <= at <= head:
                raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid, rev=at)
        segments = segments_for(self._shares_of(session), session, sid, at)
        last = segments[-1]
        copy = restamp(self._entry(last.sid, at, last.src), new_sid, digests=True)
        # Running a fork reads its revision 0 (the machine version it started on): read
        # now if not cached (the copying fork decoded it in its pass over the rows).
        first = copy if not at else restamp(
            self._entry(segments[0].sid, 0, segments[0].src), new_sid)
        revision = then(copy.revision)
        bad = StateStore._bad_move(revision, at, sid=new_sid)
        if bad is not None:
            raise bad
        # Written whole: the fork's own rows decode without its parent's.
        encoded = encode_revision(revision, copy, 1, based=True)
        params = bound(encoded.row)
        blobs = self._new_blobs(encoded) if encoded.blobs else None
        mark = fork_mark(revision) if revision.events else None
        label = verdict_label(revision.state.verdict)
        timer = timer_of(revision.state)
        shares = dump_shares(segments)
        sources = [(share.src << 32) + share.hi for share in segments]
        key = revision.rev

        def insert(c: sqlite3.Connection) -> int:
            target = new_session(c, new_sid, shares)
            for k in sources:  # not erased since (an erase takes every row)
                if c.execute("SELECT 1 FROM st_revisions WHERE k = ?", (k,)).fetchone() is None:
                    raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid,
                                          rev=at)
            if blobs:
                c.executemany(INSERT_BLOB, blobs)
            c.execute(INSERT_ROW, ((target << 32) + key, *params))
            if mark is not None:
                c.execute(PARENT, (target, *mark))
            if label is not None:
                c.execute(LABEL, (target, label))
            if timer is not None:
                c.execute(*timer_params(target, timer))
            return target

        target = self._write(insert, synced=False)
        self._ids[new_sid] = target
        self._shared[target] = tuple(segments)
        self._entries.put((new_sid, at), copy)
        if at:
            self._entries.put((new_sid, 0), first)
        self._remember(new_sid, encoded)
        return revision

    def _verify_shared(self, sid: str, session: int, head: int) -> ChainCheck:
        """The chain of a fork that shares rows, segment by segment (its parents' rows
        under their sids), then its own."""
        shares = self._shares_of(session, fresh=True)

        def check(c: sqlite3.Connection) -> ChainCheck:
            checked: set[str] = set()
            return verify_shared(
                sid, head, shares, session, lambda src, lo, hi: read_rows(c, src, lo, hi),
                lambda name, last, rows, first, parent: verify_rows(
                    c, name, last, rows, checked, first, parent))

        return self._read(check)
