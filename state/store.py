"""The revision-stamped store interface that every backend implements.

A session is an append-only chain of revisions ``0, 1, 2, ...``. ``commit`` is
compare-and-set on the head: a stale writer gets :class:`RevConflict`, never a lost
update. Nothing is edited in place; rewind and fork add revisions or sessions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from claimfsm._base.errors import BadInput
from claimfsm.state.errors import RevConflict
from claimfsm.state.model import Revision

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from claimfsm.state.catalog import HistoryPage, SummaryPage, SummaryQuery
    from claimfsm.state.errors import StoreError
    from claimfsm.state.keys import ApiKey
    from claimfsm.state.queue import WaitingPage, WaitingQuery
    from claimfsm.state.tombstone import EndedSession, EraseReport, Tombstone

__all__ = ["ChainCheck", "CompactReport", "StateStore"]


class ChainCheck(BaseModel):
    """What :meth:`StateStore.verify_chain` found in one session.

    ``problem`` is a stable UPPER_SNAKE code for the first broken link (``None`` when the
    chain is sound); ``rev`` names the revision where it breaks.
    """

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    sid: str
    revisions: int = Field(ge=0)
    rev: int | None = None
    problem: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        """True when no link is broken."""
        return self.problem is None


class CompactReport(BaseModel):
    """What :meth:`StateStore.compact` did: rows rewritten, blobs dropped, sessions skipped."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    sessions: int = 0
    rewritten: int = 0
    blobs_dropped: int = 0
    skipped: list[str] = Field(default_factory=list)


class StateStore(ABC):
    """Backends: :class:`claimfsm.state.memory.MemoryStore` and
    :class:`claimfsm.state.sqlite.store.SQLiteStore`."""

    @abstractmethod
    def create(self, first: Revision) -> Revision:
        """Start a session with revision 0 (``first.rev == 0``, ``parent_rev is None``).

        Raises :class:`RevConflict` if the session id already exists.
        """

    @abstractmethod
    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Append ``revision`` if the head is ``expected_rev`` and ``revision.rev`` is
        ``expected_rev + 1`` (its ``parent_rev`` must be ``expected_rev``); otherwise
        raise :class:`RevConflict`. Atomic: either the whole revision lands or nothing.
        """

    @abstractmethod
    def head(self, sid: str) -> Revision:
        """The newest revision (raises :class:`UnknownSession`)."""

    @abstractmethod
    def get(self, sid: str, rev: int) -> Revision:
        """One revision (raises :class:`UnknownSession` / :class:`UnknownRevision`)."""

    @abstractmethod
    def history(self, sid: str) -> Sequence[Revision]:
        """Every revision of the session, oldest first."""

    def history_page(self, sid: str, start: int = 0, limit: int = 100) -> HistoryPage:
        """Revisions ``start .. start + limit - 1`` of the session (fewer at the head),
        oldest first, with the session's revision count and the next page's start.

        Raises :class:`UnknownSession`, and ``BadInput`` for ``start < 0`` or
        ``limit < 1``. This default reads the whole history; the shipped backends seek
        to ``start``, so a page costs time in proportion to ``limit``.
        """
        from claimfsm.state.catalog import page_of  # loads when paging

        return page_of(self.history(sid), start, limit)

    @abstractmethod
    def sessions(self) -> Sequence[str]:
        """Every session id, in creation order."""

    def summaries(self, query: SummaryQuery) -> SummaryPage:
        """One page of session summaries (claim, state, verdict, revisions, last update),
        newest first, filtered and keyset-paged by ``query``. This default reads every
        listed session's head; backends with an index answer from it."""
        from claimfsm.state.catalog import scan_summaries  # listing models load when listing

        return scan_summaries(self.sessions(), self.head, query)

    def waiting(self, query: WaitingQuery) -> WaitingPage:
        """One page of the review queue (:mod:`claimfsm.state.queue`): the sessions that
        wait for a person, oldest first, filtered and keyset-paged by ``query``. This
        default reads every head; the shipped backends answer from ``st_timers``."""
        from claimfsm.state.queue import scan_waiting  # queue models load when queued

        return scan_waiting(self.sessions(), self.head, query)

    def heads(self, sids: Sequence[str]) -> dict[str, Revision]:
        """The head of each of ``sids`` that exists (the sessions a tick advances read
        at once); a head may be stale by the time it is used: commit with its ``rev``
        as ``expected_rev``. This default reads them one by one."""
        from claimfsm.state.errors import UnknownSession

        out: dict[str, Revision] = {}
        for sid in sids:
            try:
                out[sid] = self.head(sid)
            except UnknownSession:
                continue
        return out

    def batch(self) -> AbstractContextManager[object]:
        """A group of commits made durable together (one transaction, one flush, where the
        backend has them: SQLite and PostgreSQL, where an error that ends the batch undoes
        all of them). A commit that loses its compare-and-set inside it still raises
        :class:`RevConflict` and leaves the others. This default commits each on its own."""
        return nullcontext()

    def commit_all(self, items: Sequence[tuple[Revision, int]]) -> list[Revision | StoreError]:
        """Commit each ``(revision, expected_rev)`` as :meth:`commit` would, together in
        one :meth:`batch`: in each one's place, the revision committed or the
        :class:`RevConflict` (or :class:`UnknownSession`) that refused it, the others
        landing all the same. Any other error ends the batch and is raised (on the
        shipped backends, one transaction: then none of them landed). This default
        commits them one by one; PostgreSQL sends them all before reading any answer
        (one round trip, not one each)."""
        from claimfsm.state.errors import RevConflict, UnknownSession

        out: list[Revision | StoreError] = []
        with self.batch():
            for revision, expected_rev in items:
                try:
                    out.append(self.commit(revision, expected_rev=expected_rev))
                except (RevConflict, UnknownSession) as exc:
                    out.append(exc)
        return out

    def due(self, now: str, limit: int = 1000) -> list[str]:
        """Sessions whose timer (a wait deadline, a retry's due time:
        :mod:`claimfsm.state.holds`) is at or before ``now`` (a
        :func:`~claimfsm.state.holds.due_key`), earliest first, at most ``limit``. This
        default reads every head; the shipped backends answer from an index on due time.
        A listed session may have moved on since: the caller checks its head."""
        from claimfsm.state.holds import due_sessions

        return due_sessions(self.sessions(), self.head, now, limit)

    def forks(self, sid: str, limit: int = 100) -> list[dict[str, Any]]:
        """The sessions forked from ``sid`` (:mod:`claimfsm.state.lineage`): ``{"sid",
        "rev", "at"}`` each (the fork, the revision of ``sid`` it starts from, when it was
        made), oldest first, at most ``limit``. This default reads every head; the
        shipped backends answer from an index written by the fork's own commit."""
        from claimfsm.state.lineage import check_limit, scan_forks  # loads when asked

        return scan_forks(self.sessions(), self.heads, sid, check_limit(limit))

    @abstractmethod
    def fork(self, sid: str, at: int, new_sid: str, *,
             then: Callable[[Revision], Revision] | None = None) -> Revision:
        """A new session ``new_sid`` whose history is a copy of ``sid``'s revisions
        ``0..at`` (states re-stamped with ``new_sid``); returns its head. The source
        session is untouched.

        With ``then``, the fork's own revision ``at + 1``, ``then(copy's head)``, lands
        with the copy as one commit (the engine's ``Forked`` revision, indexed under its
        parent as :meth:`commit` would: :mod:`claimfsm.state.lineage`), and is returned:
        a crash leaves no fork or the whole of it. It is checked as :meth:`commit` checks
        a revision over the copy's head (:class:`RevConflict` if it does not follow), and
        stored with the same bytes and hashes.
        """

    @staticmethod
    def _bad_move(revision: Revision, expected_rev: int, *,
                  sid: str | None = None) -> RevConflict | None:
        """The conflict of ``revision`` when it is not the next revision after
        ``expected_rev`` (of session ``sid``, by default its own), for the caller to raise
        once it knows the session exists; ``BadInput`` at once for a state stamped with
        another session. Every backend's ``commit`` and ``fork(then=...)`` check with it."""
        StateStore._check_stamp(revision)
        if sid is not None and revision.sid != sid:
            return RevConflict(f"revision {revision.rev} of {revision.sid!r} is not of the "
                               f"session {sid!r}", sid=sid, rev=revision.rev,
                               expected=expected_rev)
        if revision.rev != expected_rev + 1 or revision.parent_rev != expected_rev:
            return RevConflict(
                f"revision {revision.rev} (parent {revision.parent_rev}) does not follow "
                f"expected_rev {expected_rev}", sid=revision.sid, rev=revision.rev,
                expected=expected_rev)
        return None

    @staticmethod
    def _check_stamp(revision: Revision) -> None:
        # A revision and its state name one session; a backend stores neither otherwise.
        if revision.state.sid != revision.sid:
            raise BadInput(
                f"revision.sid {revision.sid!r} differs from state.sid {revision.state.sid!r}",
                field="state.sid", sid=revision.sid, rev=revision.rev)

    def verify_chain(self, sid: str) -> ChainCheck:
        """Check the session's chain: revisions ``0..head`` contiguous, each parent the
        previous revision, every state stamped with ``sid``. Backends that store hashes
        also check them. Raises :class:`UnknownSession`.
        """
        revisions = self.history(sid)
        for expected, revision in enumerate(revisions):
            if revision.rev != expected:
                return ChainCheck(sid=sid, revisions=len(revisions), rev=expected,
                                  problem="REV_GAP", detail=f"revision {expected} is missing")
            if revision.parent_rev != (None if expected == 0 else expected - 1):
                return ChainCheck(sid=sid, revisions=len(revisions), rev=expected,
                                  problem="MISSING_PARENT",
                                  detail=f"parent_rev is {revision.parent_rev}")
            if revision.sid != sid or revision.state.sid != sid:
                return ChainCheck(sid=sid, revisions=len(revisions), rev=expected,
                                  problem="SID_MISMATCH", detail="stamped with another sid")
        return ChainCheck(sid=sid, revisions=len(revisions))

    def compact(self, sid: str | None = None) -> CompactReport:
        """Rewrite storage of one session (or all) without changing any revision; drop
        unreferenced data. Backends without an encoding to tidy report nothing done.
        """
        if sid is not None:
            self.head(sid)  # UnknownSession, like every other method
            return CompactReport(sessions=1)
        return CompactReport(sessions=len(self.sessions()))

    # -- retention and erasure (docs/operations.md) -------------------------------------

    def erase(self, heads: Mapping[str, int | None], *, actor: str, at: str,
              sweep: bool = True) -> EraseReport:
        """Delete the sessions of ``heads`` (sid -> the head it must still have, ``None``:
        any) in one transaction: their revisions (events included) and listing rows go,
        a :class:`~claimfsm.state.tombstone.Tombstone` stays, and with ``sweep`` the blobs
        no remaining revision references go too. A session that is not live, or whose
        head moved, is left alone and listed in ``skipped``. A deleted id stays taken:
        ``create`` of it is :class:`RevConflict`. Forks are copies (their own rows), so
        they read, verify and export as before. This default refuses: a backend that
        can delete overrides it."""
        from claimfsm.state.errors import StoreError

        raise StoreError(f"{type(self).__name__} cannot delete sessions")

    def delete(self, sid: str, *, actor: str, at: str) -> Tombstone:
        """Delete one session (:meth:`erase`); :class:`UnknownSession` when it is not live."""
        from claimfsm.state.errors import UnknownSession

        report = self.erase({sid: None}, actor=actor, at=at)
        if not report.tombstones:
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        return report.tombstones[0]

    def tombstones(self) -> Sequence[Tombstone]:
        """Every deleted session's tombstone, oldest deletion first."""
        return []

    def ended(self, states: Collection[str]) -> Sequence[EndedSession]:
        """The live sessions whose head is in one of ``states`` (final states), in
        creation order. This default reads every head; backends answer from an index."""
        from claimfsm.state.tombstone import EndedSession

        out = []
        for sid in self.sessions():
            head = self.head(sid)
            if head.fsm in states:
                out.append(EndedSession(sid, head.rev, head.fsm, head.ts))
        return out

    def sweep_blobs(self) -> int:
        """Drop the blobs no revision references (what :meth:`erase` with ``sweep`` does,
        once, after erasing in batches); how many. Stores without blobs drop none."""
        return 0

    # -- API keys (state/keys.py, docs/security.md) --------------------------------------

    def add_key(self, key: ApiKey) -> ApiKey:
        """Store a new key; :class:`~claimfsm.state.keys.KeyExists` when a key of that name
        exists or existed. This default refuses: a backend that keeps keys overrides it."""
        from claimfsm.state.errors import StoreError

        raise StoreError(f"{type(self).__name__} cannot keep API keys")

    def api_keys(self) -> Sequence[ApiKey]:
        """Every key, revoked ones included, oldest first (none for a store without keys)."""
        return []

    def revoke_key(self, name: str, *, at: str, actor: str | None = None) -> ApiKey:
        """Mark the live key ``name`` revoked at ``at`` by ``actor``; the revoked row.
        :class:`~claimfsm.state.keys.UnknownKey` when there is no live key of that name."""
        from claimfsm.state.keys import UnknownKey

        raise UnknownKey(f"no API key {name!r}", field="name")

    def close(self) -> None:  # noqa: B027 - optional hook, not every backend needs it
        """Release resources (connections, files)."""

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

