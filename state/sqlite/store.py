"""The embedded default store: one SQLite file in WAL mode, ``st_`` tables.

Each revision is one row holding a field delta against its parent (a full snapshot every
``snapshot_every`` revisions), large values live once in a content-addressed blob table,
and every row carries ``hash = sha256(parent_hash + canonical content)``. See
``docs/storage.md`` for the layout, the durability modes and their trade-offs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
from claimfsm.state.holds import timer_change, timer_of
from claimfsm.state.lineage import fork_mark
from claimfsm.state.model import Revision, verdict_label
from claimfsm.state.sqlite.copying import SQLiteCopying
from claimfsm.state.sqlite.db import HEAD
from claimfsm.state.sqlite.erase import LIVE, SQLiteErase
from claimfsm.state.sqlite.forks import PARENT
from claimfsm.state.sqlite.inserts import INSERT_BLOB, INSERT_ROW, LABEL, new_session, taken
from claimfsm.state.sqlite.keys import SQLiteKeys
from claimfsm.state.sqlite.listings import SQLiteListings
from claimfsm.state.sqlite.maintenance import compact_rows, prune_blobs, read_rows, verify_rows
from claimfsm.state.sqlite.rows import bound, encode_revision
from claimfsm.state.sqlite.sharing import SQLiteSharing
from claimfsm.state.sqlite.timers import timer_params
from claimfsm.state.store import ChainCheck, CompactReport, StateStore

__all__ = ["SQLiteStore"]

# A commit's row: inserted only if its parent row (key - 1) exists.
_INSERT_NEXT = INSERT_ROW.replace(
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    " SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9"
    " WHERE EXISTS (SELECT 1 FROM st_revisions WHERE k = ?1 - 1)")


class SQLiteStore(SQLiteKeys, SQLiteErase, SQLiteSharing, SQLiteCopying, SQLiteListings,
                  StateStore):
    """Revision store in one SQLite file; safe across threads and processes.

    ``durability``: ``"full"`` (fsync per commit), ``"normal"`` (WAL, fsync at
    checkpoints; survives a process crash, may lose the newest commits on power loss) or
    ``"group"`` (concurrent commits in this process share one transaction and fsync;
    each returns once durable). ``busy_timeout`` bounds how long a call waits for other
    writers before :class:`~claimfsm.state.sqlite.db.StoreBusy`. ``group_window`` (seconds) lets
    the group committer wait for more commits before each batch.
    """

    # -- the StateStore contract ------------------------------------------------------

    def __enter__(self) -> SQLiteStore:
        return self

    def create(self, first: Revision) -> Revision:
        """Start a session with revision 0; :class:`RevConflict` if it exists."""
        self._check_stamp(first)
        sid = first.sid
        if first.rev != 0 or first.parent_rev is not None:
            raise RevConflict("a session starts at revision 0 with no parent", sid=sid,
                              rev=first.rev)
        encoded = encode_revision(first, None, self.snapshot_every, based=True,
                                 refs=True)
        blobs = self._new_blobs(encoded)

        params = bound(encoded.row)
        label = verdict_label(first.state.verdict)
        timer = timer_of(first.state)

        def insert(c: sqlite3.Connection) -> int:
            session = new_session(c, sid)
            if blobs:
                c.executemany(INSERT_BLOB, blobs)
            c.execute(INSERT_ROW, ((session << 32), *params))
            if label is not None:
                c.execute(LABEL, (session, label))
            if timer is not None:
                c.execute(*timer_params(session, timer))
            return session

        session = self._ids[sid] = self._write(insert)
        self._shared[session] = ()  # a session this store started shares no rows
        self._remember(sid, encoded)
        return first

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Append ``revision`` if the head is still ``expected_rev`` (compare-and-set
        inside the write transaction, so concurrent processes cannot both win).
        """
        sid = revision.sid
        bad = self._bad_move(revision, expected_rev)
        if bad is not None:
            self._session(sid)  # an unknown session is UNKNOWN_SESSION first
            raise bad
        session = self._ids.get(sid) or self._session(sid)[0]
        try:
            parent = self._entry(sid, expected_rev, session)
        except UnknownRevision as exc:
            raise RevConflict(f"expected_rev {expected_rev} is ahead of the head", sid=sid,
                              expected=expected_rev) from exc
        encoded = encode_revision(revision, parent, self.snapshot_every, based=True,
                                 refs=True)
        blobs = self._new_blobs(encoded) if encoded.blobs else None
        params = ((session << 32) + revision.rev, *bound(encoded.row))
        # The catalog follows the verdict in the same transaction; most steps leave the
        # verdict object as it was, so this is one identity test per commit.
        old, new = parent.revision.state.verdict, revision.state.verdict
        relabel = old is not new and verdict_label(old) != verdict_label(new)
        # Timers likewise: a session that never waits or retries writes none.
        retime, timer = timer_change(parent.revision.state, revision.state)
        # A fork's own revision records its parent for the forks index (state/lineage.py).
        mark = fork_mark(revision) if revision.events else None

        def conflict(c: sqlite3.Connection) -> RevConflict | UnknownSession:
            (k,) = c.execute(f"SELECT {HEAD}", (session << 32,)).fetchone()
            if k is None:
                return UnknownSession(f"no session {sid!r}", sid=sid)
            head = k & 0xFFFFFFFF
            return RevConflict(f"head is {head}, not {expected_rev}", sid=sid, head=head,
                               expected=expected_rev)

        def insert(c: sqlite3.Connection) -> None:
            # The compare-and-set is the row's key: revision ``expected_rev + 1`` can be
            # inserted once, and only while its parent row is there (a session deleted
            # since this process read it has none). The head is the session's last key:
            # nothing else to write.
            if blobs:
                c.executemany(INSERT_BLOB, blobs)
            try:
                if c.execute(_INSERT_NEXT, params).rowcount == 0:
                    raise UnknownSession(f"no session {sid!r} (it was deleted)", sid=sid)
            except sqlite3.IntegrityError as exc:
                if not taken(exc):
                    raise
                raise conflict(c) from None
            if relabel:
                c.execute(LABEL, (session, verdict_label(new)))
            if retime:
                c.execute(*timer_params(session, timer))
            if mark is not None:
                c.execute(PARENT, (session, *mark))

        if blobs or relabel or retime or mark or self.durability == "group":
            self._write(insert)  # blobs and row in one transaction
        else:
            self._write_one(insert)  # one statement: its own transaction
        self._remember(sid, encoded)
        return revision

    def head(self, sid: str) -> Revision:
        """The newest revision (always read from the file: other processes commit too)."""
        session, head = self._session(sid)
        return self._entry(sid, head, session).revision

    def get(self, sid: str, rev: int) -> Revision:
        """One revision; revisions never change, so the cache is always valid."""
        return self._entry(sid, rev).revision

    def sessions(self) -> Sequence[str]:
        """Session ids in creation order."""
        rows = self._read(lambda c: c.execute(
            f"SELECT sid FROM st_sessions s WHERE {LIVE} ORDER BY id").fetchall())
        return [sid for (sid,) in rows]

    def fork(self, sid: str, at: int, new_sid: str, *,
             then: Callable[[Revision], Revision] | None = None) -> Revision:
        """Copy revisions ``0..at`` to ``new_sid``: rows re-stamped and re-hashed, blobs
        shared; with ``then``, its revision ``at + 1`` lands in the same transaction
        (:meth:`StateStore.fork <claimfsm.state.store.StateStore.fork>`).

        In ``full`` durability the fork's commit does not fsync by itself: it is durable
        once the store's next commit (the fork's first step, or any other), a checkpoint
        or :meth:`close` has synced the WAL, whose fsync covers every earlier frame. A
        power cut before then loses the whole fork, never part of it (WAL recovery keeps
        a transaction whole or drops it), and nothing a ``start`` or ``step`` reported
        committed. A process crash loses nothing: the frames are written before this
        returns.

        With ``then``, nothing is copied: the fork records the revisions it shares with
        its parent (state/sqlite/shares.py) and writes its own revision as a snapshot
        chained onto the parent's revision ``at``."""
        if then is not None:
            return self._fork_shared(sid, at, new_sid, then)
        return self._fork_copied(sid, at, new_sid)

    # -- integrity and maintenance ----------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Row, blob and byte counts of the ``st_`` tables (plus group-commit counters)."""

        def count(c: sqlite3.Connection) -> dict[str, int]:
            rows, body, extra = c.execute(
                "SELECT count(*), coalesce(sum(length(body)), 0), coalesce(sum(length(extra)), 0)"
                " FROM st_revisions").fetchone()
            blobs, blob_bytes = c.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM st_blobs").fetchone()
            snaps = c.execute("SELECT count(*) FROM st_revisions WHERE kind=0").fetchone()[0]
            return {"revisions": rows, "snapshots": snaps, "body_bytes": body,
                    "extra_bytes": extra, "blobs": blobs, "blob_bytes": blob_bytes}

        out = self._read(count)
        if self._group is not None:
            out["group_batches"], out["group_commits"] = self._group.batches, self._group.jobs
        return out


    def verify_chain(self, sid: str) -> ChainCheck:
        """Recompute the session's hash chain from the stored rows and check its blobs."""
        session, head = self._session(sid)
        if self._shares_of(session, fresh=True):
            return self._verify_shared(sid, session, head)
        return self._read(lambda c: verify_rows(c, sid, head, read_rows(c, session), set()))

    def revision_hash(self, sid: str, rev: int) -> str:
        """The stored chain hash of one revision (hex)."""
        return self._entry(sid, rev).hash.hex()

    def compact(self, sid: str | None = None, *, prune: bool = True) -> CompactReport:
        """Rewrite delta chains under the current ``snapshot_every`` (each session in
        its own transaction, verified before and after) and, with ``prune``, drop blobs
        no row references. Sessions whose chain does not verify are left untouched and
        listed in ``skipped``. Every revision reads the same before and after.
        """
        targets = [sid] if sid is not None else list(self.sessions())
        rewritten, skipped = 0, []
        for name in targets:
            count = self._write(self._compactor(name, self._session(name)[0]))
            if count is None:
                skipped.append(name)
            else:
                rewritten += count
        dropped = self._write(prune_blobs) if prune else 0
        if dropped:
            self._known.clear()
        self._reclaim()
        return CompactReport(sessions=len(targets), rewritten=rewritten,
                             blobs_dropped=dropped, skipped=skipped)

    def _compactor(self, sid: str, session: int) -> Callable[[sqlite3.Connection], int | None]:
        shared = bool(self._shares_of(session, fresh=True))

        def run(c: sqlite3.Connection) -> int | None:
            # A fork that shares rows keeps its own as written (its first is a snapshot a
            # rewrite under the interval would make a delta of a row it does not hold).
            return 0 if shared else compact_rows(c, session, sid, self.snapshot_every)

        return run
