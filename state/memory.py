"""The in-memory store: plain dicts behind one lock, for tests and in-memory benchmarks.

Revisions are frozen values. The store hands back a session's head as the very object it
was given; the revisions before it are kept packed (:mod:`claimfsm.state.retained`, out
of the cyclic collector's reach) and built again, equal and of the same types, when read.
Treat what it returns as immutable, nested lists and dicts included.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
from claimfsm.state.lineage import check_limit, fork_mark
from claimfsm.state.model import Revision
from claimfsm.state.retained import BATCH, LIVE, Chain
from claimfsm.state.store import StateStore

if TYPE_CHECKING:
    from claimfsm.state.catalog import HistoryPage
    from claimfsm.state.keys import ApiKey
    from claimfsm.state.tombstone import EraseReport, Tombstone

__all__ = ["MemoryStore"]


class MemoryStore(StateStore):
    """Thread-safe, process-local; nothing survives the process."""

    def __init__(self) -> None:
        self._chains: dict[str, Chain] = {}
        self._deleted: dict[str, Tombstone] = {}
        self._keys: dict[str, ApiKey] = {}
        # parent sid -> its forks (sid, parent rev, when), in the order they were made.
        self._forks: dict[str, list[tuple[str, int, str]]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> MemoryStore:
        return self

    def _chain(self, sid: str) -> Chain:
        chain = self._chains.get(sid)
        if chain is None:
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        return chain

    def create(self, first: Revision) -> Revision:
        """Start a session with revision 0; :class:`RevConflict` if it exists."""
        self._check_stamp(first)
        if first.rev != 0 or first.parent_rev is not None:
            raise RevConflict("a session starts at revision 0 with no parent", sid=first.sid,
                              rev=first.rev)
        with self._lock:
            if first.sid in self._chains or first.sid in self._deleted:
                raise RevConflict(f"session {first.sid!r} already exists", sid=first.sid)
            self._chains[first.sid] = Chain(first)
        return first

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Append ``revision`` if the head is ``expected_rev`` (compare-and-set)."""
        sid = revision.sid
        bad = self._bad_move(revision, expected_rev)
        with self._lock:
            chain = self._chains.get(sid)
            if chain is None:
                raise UnknownSession(f"no session {sid!r}", sid=sid)
            head = chain[-1].rev
            if head != expected_rev:
                raise RevConflict(f"head is {head}, not {expected_rev}", sid=sid, head=head,
                                  expected=expected_rev)
            if bad is not None:
                raise bad
            chain.append(revision)
            if len(chain) > LIVE + BATCH:
                chain.pack_oldest()
            mark = fork_mark(revision) if revision.events else None
            if mark is not None:
                self._forks.setdefault(mark[0], []).append((sid, mark[1], mark[2]))
        return revision

    def forks(self, sid: str, limit: int = 100) -> list[dict[str, Any]]:
        """The forks of ``sid`` from the index its forks' commits keep."""
        check_limit(limit)
        with self._lock:
            found = [{"sid": name, "rev": rev, "at": at}
                     for name, rev, at in self._forks.get(sid, ()) if name in self._chains]
        return found[:limit]

    def head(self, sid: str) -> Revision:
        """The newest revision."""
        with self._lock:
            return self._chain(sid)[-1]

    def get(self, sid: str, rev: int) -> Revision:
        """One revision."""
        with self._lock:
            chain = self._chain(sid)
            if not 0 <= rev <= chain[-1].rev:
                raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
            return chain.get(rev)

    def history(self, sid: str) -> Sequence[Revision]:
        """Every revision, oldest first (a list of its own: later commits do not show)."""
        with self._lock:
            return self._chain(sid).revisions()

    def history_page(self, sid: str, start: int = 0, limit: int = 100) -> HistoryPage:
        """Revisions ``start .. start + limit - 1``: a slice, not a copy of the chain."""
        from claimfsm.state.catalog import HistoryPage, check_page  # loads when paging

        check_page(start, limit)
        with self._lock:
            chain = self._chain(sid)
            return HistoryPage.of(chain.revisions(start, start + limit), start, limit,
                                  chain[-1].rev)

    def sessions(self) -> Sequence[str]:
        """Session ids in creation order (dicts keep insertion order)."""
        with self._lock:
            return list(self._chains)

    def fork(self, sid: str, at: int, new_sid: str, *,
             then: Callable[[Revision], Revision] | None = None) -> Revision:
        """Copy revisions ``0..at`` to ``new_sid`` with states re-stamped; with ``then``,
        its revision ``at + 1`` lands with them (:meth:`StateStore.fork`)."""
        with self._lock:
            chain = self._chain(sid)
            if not 0 <= at <= chain[-1].rev:
                raise UnknownRevision(f"session {sid!r} has no revision {at}", sid=sid, rev=at)
            if new_sid in self._chains or new_sid in self._deleted:
                raise RevConflict(f"session {new_sid!r} already exists", sid=new_sid)
            copies = chain.forked(at, new_sid)
            if then is None:
                self._chains[new_sid] = copies
                return copies[-1]
        own = then(copies[-1])  # built outside the lock: it is the caller's code
        bad = self._bad_move(own, at, sid=new_sid)
        if bad is not None:
            raise bad
        mark = fork_mark(own) if own.events else None
        with self._lock:
            if new_sid in self._chains or new_sid in self._deleted:
                raise RevConflict(f"session {new_sid!r} already exists", sid=new_sid)
            copies.append(own)
            if len(copies) > LIVE + BATCH:
                copies.pack_oldest()
            self._chains[new_sid] = copies
            if mark is not None:
                self._forks.setdefault(mark[0], []).append((new_sid, mark[1], mark[2]))
        return own

    def erase(self, heads: Mapping[str, int | None], *, actor: str, at: str,
              sweep: bool = True) -> EraseReport:
        """Drop the sessions' chains and keep a tombstone each (see
        :meth:`StateStore.erase`); forks hold their own copies already."""
        from claimfsm.state.tombstone import EraseReport, Tombstone

        written: list[Tombstone] = []
        skipped: dict[str, str] = {}
        with self._lock:
            for sid, expected in heads.items():
                chain = self._chains.get(sid)
                if chain is None:
                    skipped[sid] = "gone"
                    continue
                last = chain[-1]
                if expected is not None and last.rev != expected:
                    skipped[sid] = "moved"
                    continue
                stone = Tombstone(sid=sid, deleted_at=at, actor=actor, head=last.rev,
                                  fsm=last.fsm)
                del self._chains[sid]
                self._deleted[sid] = stone
                written.append(stone)
        return EraseReport(tombstones=written, skipped=skipped)

    def tombstones(self) -> Sequence[Tombstone]:
        """Every tombstone, oldest deletion first."""
        with self._lock:
            return sorted(self._deleted.values(), key=lambda t: t.deleted_at)

    def add_key(self, key: ApiKey) -> ApiKey:
        """Keep ``key``; :class:`~claimfsm.state.keys.KeyExists` for a name already used."""
        from claimfsm.state.keys import KeyExists

        with self._lock:
            if key.name in self._keys:
                raise KeyExists(f"name: an API key {key.name!r} exists or existed",
                                field="name")
            self._keys[key.name] = key
        return key

    def api_keys(self) -> Sequence[ApiKey]:
        """Every key, oldest first."""
        with self._lock:
            return list(self._keys.values())

    def revoke_key(self, name: str, *, at: str, actor: str | None = None) -> ApiKey:
        """Mark the live key ``name`` revoked."""
        from claimfsm.state.keys import UnknownKey

        with self._lock:
            key = self._keys.get(name)
            if key is None or key.revoked_at is not None:
                raise UnknownKey(f"name: no live API key {name!r}", field="name")
            self._keys[name] = key.model_copy(update={"revoked_at": at, "revoked_by": actor})
            return self._keys[name]
