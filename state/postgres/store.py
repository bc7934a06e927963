"""The server store: sessions in PostgreSQL, shared by every worker of a batch.

The same row format as the SQLite backend (field deltas against the parent with a full
snapshot every ``snapshot_every`` revisions, large values in content-addressed blobs
shared across sessions, ``hash = sha256(parent_hash + canonical content)``), so the
same decoder, hash chain and fork re-stamping serve both. See ``docs/scale.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from claimfsm.state.errors import RevConflict, UnknownRevision
from claimfsm.state.holds import timer_of
from claimfsm.state.model import Revision
from claimfsm.state.postgres.commit import HEAD_OF, TIMER, PostgresCommit
from claimfsm.state.postgres.core import MAX_REV
from claimfsm.state.postgres.db import (
    CREATE,
    CREATE_BLOBS,
    HEADS,
    PAGE,
    insert_session,
    listed,
    retrying,
)
from claimfsm.state.postgres.keys import PostgresKeys
from claimfsm.state.postgres.verify import prune_blobs, verify_rows
from claimfsm.state.sqlite.db import ChainBroken, CorruptStore
from claimfsm.state.sqlite.forks import forked_entry, restamp_rows
from claimfsm.state.sqlite.read import checked_page
from claimfsm.state.sqlite.rows import Encoded, encode_revision, inflate, packed
from claimfsm.state.store import ChainCheck, CompactReport, StateStore

if TYPE_CHECKING:
    from claimfsm.state.catalog import HistoryPage, SummaryPage, SummaryQuery
    from claimfsm.state.queue import WaitingPage, WaitingQuery

__all__ = ["HEAD_OF", "TIMER", "PostgresStore"]


class PostgresStore(PostgresKeys, PostgresCommit, StateStore):
    """Revision store in a PostgreSQL database (``postgresql://`` URL); one connection
    per store, safe across threads (calls are serialised) and processes.

    Durability is the server's: with ``synchronous_commit=on`` (the default) a commit
    returns once its WAL record is flushed. ``connect_timeout`` is in seconds. With
    ``create=False`` a database without the ``st_`` tables is
    :class:`~claimfsm.state.errors.NoStore` (read-only commands never create a store).
    """

    def __enter__(self) -> PostgresStore:
        return self

    # -- the StateStore contract ------------------------------------------------------

    def create(self, first: Revision) -> Revision:
        """Start a session with revision 0; :class:`RevConflict` if it exists."""
        sql, params, encoded = self._create_plan(first)
        rows = self._query(sql, params)
        if not rows:
            raise RevConflict(f"session {first.sid!r} already exists", sid=first.sid)
        timer = timer_of(first.state)
        if timer is not None:  # paused before its first state: listed as waiting
            self._query(TIMER, (rows[0][0], timer[0], int(timer[1]), timer[2]))
        self._created(first.sid, rows[0][0], encoded)
        return first

    def _create_plan(self, first: Revision) -> tuple[str, tuple[Any, ...], Encoded]:
        """The statement that stores revision 0 (the async store runs it too)."""
        self._check_stamp(first)
        sid = first.sid
        if first.rev != 0 or first.parent_rev is not None:
            raise RevConflict("a session starts at revision 0 with no parent", sid=sid,
                              rev=first.rev)
        encoded = encode_revision(first, None, self.snapshot_every)
        hashes, zs, datas = self._new_blobs(encoded)
        row = (0, *packed(encoded.row))
        entry = listed(first.state)
        if hashes:
            return CREATE_BLOBS, (sid, hashes, zs, datas, *entry, *row), encoded
        return CREATE, (sid, *entry, *row), encoded

    def _created(self, sid: str, session: int, encoded: Encoded) -> None:
        self._ids[sid] = session
        self._remember(sid, encoded)

    def head(self, sid: str) -> Revision:
        """The newest revision (the head is always read from the server)."""
        session, head = self._session(sid)
        return self._entry(sid, head, session).revision

    def get(self, sid: str, rev: int) -> Revision:
        """One revision; revisions never change, so the cache is always valid."""
        return self._entry(sid, rev).revision

    def history(self, sid: str) -> Sequence[Revision]:
        """Every revision up to the current head, oldest first."""
        session, head = self._session(sid)
        cached = [self._entries.get((sid, rev)) for rev in range(head + 1)]
        if all(entry is not None for entry in cached):
            return [entry.revision for entry in cached if entry is not None]
        return [e.revision for e in self._decode(sid, self._rows(session, 0, head), every=True)]

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
            try:
                rows = checked_page(self._rows(session, first, last, PAGE), first, last)
                entries = self._decode(sid, rows, every=True, first=first)
            except ValueError as exc:  # CodecError: no snapshot below the page, or a gap
                raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
            return [e.revision for e in entries]

        return read_page(start, limit, head, cached, fetch)

    def sessions(self) -> Sequence[str]:
        """Session ids in creation order."""
        return [sid for (sid,) in self._query(
            "SELECT sid FROM st_sessions WHERE head >= 0 ORDER BY id")]

    def summaries(self, query: SummaryQuery) -> SummaryPage:
        """A page of session summaries from the catalog (one indexed query)."""
        from claimfsm.state.catalog import scan_summaries
        from claimfsm.state.postgres.catalog import fill_catalog, list_page  # loads when listing

        if not self._catalog_complete:
            self._catalog_complete = self._locked(lambda: fill_catalog(self._conn, self.head))
        if not self._catalog_complete:
            return scan_summaries(self.sessions(), self.head, query)  # from before the catalog
        return self._locked(lambda: list_page(self._conn, query))

    def heads(self, sids: Sequence[str]) -> dict[str, Revision]:
        """The heads of ``sids`` in one query: each session's rows from its last snapshot
        to its head, decoded (and cached) as :meth:`head` would."""
        rows = self._query(HEADS, (list(sids),))
        grouped: dict[str, list[tuple[Any, ...]]] = {}
        for sid, session, *row in rows:
            self._ids[sid] = session
            grouped.setdefault(sid, []).append(tuple(row))
        out: dict[str, Revision] = {}
        for sid, part in grouped.items():
            decoded = inflate([(*r[:6], bytes(r[6]), bytes(r[7]), bytes(r[8]))
                               for r in part])
            out[sid] = self._decode(sid, decoded, every=False)[-1].revision
        return out

    @contextmanager
    def batch(self) -> Iterator[object]:
        """Commits in one transaction: one flush to disk for all of them (``claimfsm
        tick``). If the transaction fails, every revision it committed is forgotten by
        the caches too (none of them exists)."""
        with self._lock:
            try:
                with self._conn.transaction():
                    yield self
            except BaseException:
                self._entries.clear()
                self._known.clear()
                self._blobs.clear()
                self._ids.clear()
                raise

    def forks(self, sid: str, limit: int = 100) -> list[dict[str, Any]]:
        """The forks of ``sid`` from the index on ``st_catalog.parent`` (filled once on a
        database from before it; scanned when opened read-only without it)."""
        from claimfsm.state.lineage import check_limit, scan_forks
        from claimfsm.state.postgres.catalog import fill_forks, fork_rows  # loads when asked

        check_limit(limit)
        if not self._catalog_complete:
            from claimfsm.state.catalog import SummaryQuery

            self.summaries(SummaryQuery(limit=1))  # an old database's catalog rows first
        if not self._catalog_complete or not self._locked(
                lambda: fill_forks(self._conn, self.sessions(), self.heads)):
            return scan_forks(self.sessions(), self.heads, sid, limit)
        return self._locked(lambda: fork_rows(self._conn, sid, limit))

    def due(self, now: str, limit: int = 1000) -> list[str]:
        """Sessions due at ``now``, from the index on due time (``st_timers``)."""
        from claimfsm.state.postgres.catalog import due_page  # loads when ticking

        return self._locked(lambda: due_page(self._conn, self.head, now, limit))

    def waiting(self, query: WaitingQuery) -> WaitingPage:
        """A page of the review queue from ``st_timers`` (state/postgres/queue.py)."""
        from claimfsm.state.catalog import SummaryQuery
        from claimfsm.state.postgres.catalog import fill_timers
        from claimfsm.state.postgres.queue import waiting_page  # loads when queued
        from claimfsm.state.queue import scan_waiting

        if not self._catalog_complete:
            self.summaries(SummaryQuery(limit=1))  # fills an old database's catalog once
        timers = self._locked(lambda: fill_timers(self._conn, self.head))
        if not self._catalog_complete or not timers:
            return scan_waiting(self.sessions(), self.head, query)  # read-only, from before
        return self._locked(lambda: waiting_page(self._conn, query))

    def fork(self, sid: str, at: int, new_sid: str, *,
             then: Callable[[Revision], Revision] | None = None) -> Revision:
        """Copy revisions ``0..at`` to ``new_sid``: rows re-stamped and re-hashed, blobs
        shared; with ``then``, its revision ``at + 1`` is committed in the same
        transaction (:meth:`StateStore.fork`)."""
        session, head = self._session(sid)
        if not 0 <= at <= head:
            raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid, rev=at)
        try:
            restamped = restamp_rows(self._rows(session, 0, at), sid, new_sid)
        except (ValueError, TypeError) as exc:
            raise ChainBroken(str(exc), sid=sid) from exc
        copies = restamped.rows
        source = self.get(sid, at)
        entry, timer = listed(source.state), timer_of(source.state)
        own: Revision | None = None
        landed: list[Encoded] = []
        copied = forked_entry(source, new_sid, restamped)
        if then is not None:
            own = then(copied.revision)
            bad = self._bad_move(own, at, sid=new_sid)
            if bad is not None:
                raise bad

        def commit_own(target: int) -> None:
            # The commit statement a later ``commit`` would send, inside the copy's
            # transaction: it cannot lose its compare-and-set (the head is ``at``).
            assert own is not None
            sql, params, encoded = self._commit_plan(own, at, target, copied)
            if not self._conn.execute(sql, params).fetchall():
                raise RevConflict(f"session {new_sid!r} moved during its fork", sid=new_sid)
            landed.append(encoded)

        def insert() -> int | None:
            landed.clear()
            with self._lock:
                return insert_session(self._conn, new_sid, at,
                                      [(r[0], *packed(r)) for r in copies], entry, timer,
                                      None if own is None else commit_own)

        target = retrying(insert)
        if target is None:
            raise RevConflict(f"session {new_sid!r} already exists", sid=new_sid)
        self._ids[new_sid] = target
        if own is None:
            return self.head(new_sid)
        self._entries.put((new_sid, at), copied)
        self._remember(new_sid, landed[-1])
        return own

    # -- integrity and maintenance ----------------------------------------------------

    def verify_chain(self, sid: str) -> ChainCheck:
        """Recompute the session's hash chain from the stored rows and check its blobs."""
        session, head = self._session(sid)
        rows = self._rows(session, 0, MAX_REV)
        return verify_rows(sid, head, rows, self._stored_blob, set())

    def _stored_blob(self, digest: str) -> tuple[int, bytes] | None:
        rows = self._query("SELECT z, data FROM st_blobs WHERE h = %s", (bytes.fromhex(digest),))
        return (rows[0][0], bytes(rows[0][1])) if rows else None

    def revision_hash(self, sid: str, rev: int) -> str:
        """The stored chain hash of one revision (hex)."""
        return self._entry(sid, rev).hash.hex()

    def compact(self, sid: str | None = None, *, prune: bool = True) -> CompactReport:
        """Verify the chains and, with ``prune``, drop blobs no row references (left by
        commits that lost their compare-and-set). Rows are written in their final layout,
        so none is rewritten; sessions whose chain does not verify are listed in
        ``skipped``.
        """
        targets = [sid] if sid is not None else list(self.sessions())
        skipped = [name for name in targets if not self.verify_chain(name).ok]

        def run() -> int:
            with self._lock, self._conn.transaction():
                return prune_blobs(self._conn)

        dropped = retrying(run) if prune else 0
        if dropped:
            self._known.clear()
        self._reclaim()
        return CompactReport(sessions=len(targets), rewritten=0, blobs_dropped=dropped,
                             skipped=skipped)
