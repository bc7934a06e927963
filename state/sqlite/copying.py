"""The fork that copies its parent's rows (a bare ``fork`` without ``then``): revisions
``0..at`` re-stamped under the fork's sid and re-hashed, blobs shared, in one
transaction. Its own module beside :mod:`claimfsm.state.sqlite.sharing`, the fork that
shares them instead; :meth:`SQLiteStore.fork
<claimfsm.state.sqlite.store.SQLiteStore.fork>` chooses between the two.
"""

from __future__ import annotations

import sqlite3

from claimfsm.state import codec
from claimfsm.state.errors import UnknownRevision
from claimfsm.state.holds import timer_of
from claimfsm.state.model import Revision, verdict_label
from claimfsm.state.sqlite.db import ChainBroken
from claimfsm.state.sqlite.entries import SQLiteEntries
from claimfsm.state.sqlite.forks import restamp_rows
from claimfsm.state.sqlite.inserts import INSERT_ROW, LABEL, new_session
from claimfsm.state.sqlite.maintenance import SELECT_ROWS
from claimfsm.state.sqlite.rows import SNAPSHOT, bind_ts, inflate
from claimfsm.state.sqlite.timers import timer_params

__all__ = ["SQLiteCopying"]


class SQLiteCopying(SQLiteEntries):
    """Copying forks (see :meth:`SQLiteStore.fork
    <claimfsm.state.sqlite.store.SQLiteStore.fork>`)."""

    def _fork_copied(self, sid: str, at: int, new_sid: str) -> Revision:
        """Copy revisions ``0..at`` of ``sid`` to ``new_sid``, in one transaction (a fork
        with its own revision shares its parent's rows instead:
        :mod:`claimfsm.state.sqlite.sharing`)."""
        session = self._ids.get(sid)
        source = self._entries.get((sid, at))
        if session is None or source is None:
            # Unless revision ``at`` is cached (revisions are never deleted, so it still
            # exists), the head says whether it does.
            session, head = self._session(sid)
            if not 0 <= at <= head:
                raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid, rev=at)
        base = session << 32
        stored = self._read(lambda c: c.execute(SELECT_ROWS, (base, base + at)).fetchall())
        if len(stored) != at + 1:  # erased since its head was read
            raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid, rev=at)
        try:
            # One pass checks the rows, re-chains them and decodes the copy's revisions 0
            # and ``at`` (from the source's entry when cached): nothing is read back.
            copies = restamp_rows(inflate(stored), sid, new_sid, fetch=self._fetch,
                                  head=None if source is None else source.revision)
        except (ValueError, TypeError, KeyError) as exc:  # CodecError, or rows of wrong types
            raise ChainBroken(str(exc), sid=sid) from exc
        # Deltas and ``extra`` are copied as stored (packed or not: hashes are over the
        # canonical bytes); only snapshots, which carry the sid, are packed anew.
        # So is ``ts`` (packed or text, :mod:`claimfsm.state.sqlite.stamp`).
        params = [(r[0], *r[1:5], bind_ts(raw[5]),
                   bytearray(codec.pack_row(r[6], snapshot=True))
                   if r[2] == SNAPSHOT else bytearray(raw[6]), bytearray(raw[7]),
                   bytearray(r[8])) for r, raw in zip(copies.rows, stored, strict=True)]
        copied = copies.last
        assert copied is not None  # restamp_rows builds it when given ``fetch``
        revision = copied.revision
        label = verdict_label(revision.state.verdict)
        timer = timer_of(revision.state)

        def insert(c: sqlite3.Connection) -> int:
            target = new_session(c, new_sid)
            c.executemany(INSERT_ROW, [((target << 32) + p[0], *p[1:]) for p in params])
            if label is not None:
                c.execute(LABEL, (target, label))
            if timer is not None:
                c.execute(*timer_params(target, timer))
            return target

        self._ids[new_sid] = self._write(insert, synced=False)
        if copies.first is not None:
            # Running a fork reads its revision 0 (the machine version it started on).
            self._entries.put((new_sid, 0), copies.first)
        self._entries.put((new_sid, at), copied)
        return revision
