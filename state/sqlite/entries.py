"""Revisions by number through the caches: a session's number and head, the decoded
entry of one revision (from the cache, a cached ancestor, the file, or a parent the fork
shares it with), blobs by hash, what a commit adds to the caches, and a session's
revisions in order (``history``, its pages). The half of
:class:`~claimfsm.state.sqlite.store.SQLiteStore` every read and commit goes through,
on top of the connection plumbing of :class:`~claimfsm.state.sqlite.core.SQLiteCore`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.state import codec
from claimfsm.state.codec import CodecError
from claimfsm.state.errors import UnknownRevision, UnknownSession
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.core import SQLiteCore
from claimfsm.state.sqlite.db import HEAD, CorruptStore
from claimfsm.state.sqlite.decode import ChainDecoder, decode_rows
from claimfsm.state.sqlite.maintenance import read_rows
from claimfsm.state.sqlite.read import AGAIN, CHAIN_ROWS, READ_ROWS, page_rows, read_revision
from claimfsm.state.sqlite.rows import Encoded, Entry, Row, inflate
from claimfsm.state.sqlite.shares import Share, load_shares, restamp, segment_of

if TYPE_CHECKING:
    from claimfsm.state.catalog import HistoryPage

__all__ = ["SQLiteEntries"]

_CHAIN_RANGE = (
    "SELECT k & 4294967295, parent_rev, kind, fsm, skill, ts, body, extra, hash"
    " FROM st_revisions WHERE k BETWEEN ?1 AND ?2 ORDER BY k"
)
_MAX_REV = 0xFFFFFFFF
_HEAD_OF = f"SELECT {HEAD}"
_SESSION = (f"SELECT id, {HEAD.replace('?1', '(id << 32)')} FROM st_sessions"
            " WHERE sid = ?")


def _ignore(row: Row, entry: Entry) -> None:
    """Entries are cached by :meth:`SQLiteEntries._decode` itself, sid checked first."""


class SQLiteEntries(SQLiteCore):
    """Cached reads by revision number (see
    :class:`claimfsm.state.sqlite.store.SQLiteStore`)."""

    def _session(self, sid: str) -> tuple[int, int]:
        """``(session number, head)``; raises :class:`UnknownSession`."""
        known = self._ids.get(sid)
        if known is not None:  # session numbers never change: seek the head by key
            found = self._read(lambda c: c.execute(_HEAD_OF, (known << 32,)).fetchone())
            if found[0] is not None:
                return known, found[0] & _MAX_REV
        row = self._read(lambda c: c.execute(_SESSION, (sid,)).fetchone())
        if row is None or row[1] is None:
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        self._ids[sid] = row[0]
        return row[0], row[1] & _MAX_REV

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one reading statement (:meth:`_read`'s, with fewer layers on a
        store that holds its write connection)."""
        with self._lock:
            cursor = self._cursor
            if cursor is not None and self._link is None and not self._closed:
                try:
                    return cursor.execute(sql, params).fetchall()
                except sqlite3.Error:
                    pass  # run again below, where busy is retried and errors are mapped
        return self._read(lambda c: c.execute(sql, params).fetchall())

    def _fetch(self, digest: str) -> bytes:
        raw = self._blobs.get(digest)
        if raw is not None:
            return raw
        row = self._read(
            lambda c: c.execute(
                "SELECT z, data FROM st_blobs WHERE h=?", (bytes.fromhex(digest),)
            ).fetchone()
        )
        if row is None:
            raise CodecError(f"blob {digest[:12]} is missing")
        raw = codec.unpack_blob(row[0], row[1])
        if hashlib.sha256(raw).hexdigest() != digest:
            raise CodecError(f"blob {digest[:12]} does not match its hash")
        self._blobs.put(digest, raw)
        self._known.put(digest, True)
        return raw

    def _decode(
        self, sid: str, rows: list[Row], start: Entry | None = None, *, every: bool = True,
        first: int = 0,
    ) -> list[Entry]:
        """Entries for ``rows`` (all of them from revision ``first``, or with
        ``every=False`` only the last)."""
        decoder = ChainDecoder(sid) if start is None else ChainDecoder.resume(sid, start)
        out = decode_rows(sid, decoder, rows, self._fetch, _ignore, every=every, first=first)
        put = self._entries.put
        for i, entry in enumerate(out):
            if entry.revision.state.sid != sid:  # a shared prefix copied in by an erase
                out[i] = entry = restamp(entry, sid)
            put((sid, entry.revision.rev), entry)
        return out

    def _entry(self, sid: str, rev: int, session: int | None = None) -> Entry:
        entries = self._entries
        peek = entries.peek
        if peek((sid, rev)) is not None:
            cached = entries.get((sid, rev))
            if cached is not None:
                return cached
        if session is None:
            session = self._ids.get(sid) or self._session(sid)[0]
        if not 0 <= rev <= _MAX_REV:  # beyond it, keys would run into the next session
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        shared = self._shared.get(session)
        if shared:
            share = segment_of(shared, rev)
            if share is not None and share.src != session:  # its parent's row: no own read
                found = self._from_share(sid, rev, session)
                entries.put((sid, rev), found)
                return found
        base = session << 32
        if rev and entries.count():
            # Resume from a cached ancestor when one is near (a head that moved on, a
            # walk forward) instead of starting again at the snapshot.
            for back in range(rev - 1, max(-1, rev - self.snapshot_every - 1), -1):
                if peek((sid, back)) is not None:
                    start = entries.get((sid, back))
                    if start is not None:
                        try:
                            return self._resume(sid, rev, base, start)
                        except UnknownRevision:
                            break  # not in this session's rows: maybe its parent's
        target = base + rev
        try:
            entry = read_revision(sid, rev, target, self._all(READ_ROWS, (base, target)),
                                  self._fetch)
            if entry is AGAIN:
                entry = read_revision(sid, rev, target, self._all(CHAIN_ROWS, (base, target)),
                                      self._fetch)
        except (ValueError, TypeError, KeyError) as exc:  # CodecError, or rows of wrong types
            raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
        if not isinstance(entry, Entry):
            entry = self._from_share(sid, rev, session)
        elif entry.revision.state.sid != sid:  # a shared prefix copied in by an erase
            entry = restamp(entry, sid)
        entries.put((sid, rev), entry)
        return entry

    def _shares_of(self, session: int, fresh: bool = False) -> tuple[Share, ...]:
        """The segments session number ``session`` shares (``fresh``: read again, after
        another process erased a parent)."""
        known = None if fresh else self._shared.get(session)
        if known is None:
            try:
                known = self._read(lambda c: load_shares(c, session))
            except ValueError as exc:  # CodecError: the column was damaged
                raise CorruptStore(f"session number {session}: {exc}") from exc
            self._shared[session] = known
        return known

    def _from_share(self, sid: str, rev: int, session: int) -> Entry:
        """Revision ``rev`` of a fork that shares it with a parent, under the fork's sid."""
        for fresh in (False, True):
            share = segment_of(self._shares_of(session, fresh), rev)
            if share is None:
                break
            try:
                return restamp(self._entry(share.sid, rev, share.src), sid)
            except UnknownRevision:
                continue  # its parent erased since: the rows are the fork's own now
        raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)

    def _resume(self, sid: str, rev: int, base: int, start: Entry) -> Entry:
        bounds = (base + start.revision.rev + 1, base + rev)
        rows = inflate(self._read(lambda c: c.execute(_CHAIN_RANGE, bounds).fetchall()))
        if not rows or rows[-1][0] != rev:
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        return self._decode(sid, rows, start, every=False)[-1]

    def _new_blobs(self, encoded: Encoded) -> list[tuple[bytes, int, bytes]]:
        return [
            (bytes.fromhex(h), *codec.pack_blob(raw))
            for h, raw in encoded.blobs.items()
            if h not in self._known
        ]

    def _remember(self, sid: str, encoded: Encoded) -> None:
        self._entries.put((sid, encoded.row[0]), encoded.entry)
        if encoded.blobs:
            for digest in encoded.blobs:
                self._known.put(digest, True)

    def history(self, sid: str) -> Sequence[Revision]:
        """Every revision up to the current head, oldest first."""
        session, head = self._session(sid)
        cached = [self._entries.get((sid, rev)) for rev in range(head + 1)]
        if all(entry is not None for entry in cached):
            return [entry.revision for entry in cached if entry is not None]
        if self._shares_of(session):  # a fork that shares its parent's rows
            return [self._entry(sid, rev, session).revision for rev in range(head + 1)]
        rows = self._read(lambda c: read_rows(c, session, 0, head))
        return [entry.revision for entry in self._decode(sid, rows)]

    def history_page(self, sid: str, start: int = 0, limit: int = 100) -> HistoryPage:
        """Revisions ``start .. start + limit - 1``: the rows from the nearest snapshot
        at or below ``start`` through the page's last, found by key (never the rows
        before them)."""
        from claimfsm.state.catalog import check_page, read_page  # loads when paging

        check_page(start, limit)
        session, head = self._session(sid)

        def cached(rev: int) -> Revision | None:
            entry = self._entries.get((sid, rev))
            return entry.revision if entry is not None else None

        def fetch(first: int, last: int) -> list[Revision]:
            if self._shares_of(session):  # a fork that shares its parent's rows
                return [self._entry(sid, rev, session).revision
                        for rev in range(first, last + 1)]
            try:
                rows = self._read(lambda c: page_rows(c, session, first, last))
                entries = self._decode(sid, rows, first=first)
            except ValueError as exc:  # CodecError: no snapshot below the page, or a gap
                raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
            return [e.revision for e in entries]

        return read_page(start, limit, head, cached, fetch)
