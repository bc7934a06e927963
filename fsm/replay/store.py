"""The store a replay runs on by default: in memory, holding only the revisions the
replay can still ask for, so a long record replays in memory that does not grow with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore

__all__ = ["ReplayStore"]


class ReplayStore(StateStore):
    """One session's revisions, pruned as it goes.

    A driver reads back a revision other than the head only for ``rb=state``/``rb=tools``
    (the revision the current state was entered at, ``state.entry_rev``) and for a
    rewind (its target, whose own entry revision a later rollback may need). So the store
    keeps the head, the head's entry revision, every revision in ``pinned`` (the record's
    rewind targets) and their entry revisions; every other revision is dropped when the
    next one is committed. :meth:`history` returns the revisions kept.
    """

    def __init__(self, pinned: Iterable[int] = ()) -> None:
        self.pinned = frozenset(pinned)
        self._sid: str | None = None
        self._revs: dict[int, Revision] = {}
        self._head: Revision | None = None

    def create(self, first: Revision) -> Revision:
        """Start the one session (:class:`RevConflict` for a second)."""
        self._check_stamp(first)
        if self._sid is not None:
            raise RevConflict("a replay store holds one session", sid=first.sid)
        if first.rev != 0 or first.parent_rev is not None:
            raise RevConflict("a session starts at revision 0 with no parent", sid=first.sid,
                              rev=first.rev)
        self._sid, self._head, self._revs = first.sid, first, {0: first}
        return first

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        """Append ``revision`` if the head is ``expected_rev``; drop what is not needed."""
        head = self.head(revision.sid)
        self._check_stamp(revision)
        if head.rev != expected_rev or revision.rev != expected_rev + 1 \
                or revision.parent_rev != expected_rev:
            raise RevConflict(f"head is {head.rev}, not {expected_rev}", sid=revision.sid,
                              head=head.rev, expected=expected_rev)
        revs = self._revs
        revs[revision.rev] = revision
        self._head = revision
        keep = {revision.rev, revision.state.entry_rev}
        for rev in self.pinned:
            kept = revs.get(rev)
            if kept is not None:
                keep.update((rev, kept.state.entry_rev))
        for rev in [r for r in revs if r not in keep]:
            del revs[rev]
        return revision

    def head(self, sid: str) -> Revision:
        """The newest revision."""
        if sid != self._sid or self._head is None:
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        return self._head

    def get(self, sid: str, rev: int) -> Revision:
        """A revision still kept (:class:`UnknownRevision` for one dropped or never made)."""
        head = self.head(sid)
        found = self._revs.get(rev)
        if found is None:
            what = "was dropped by the replay store" if 0 <= rev <= head.rev else "does not exist"
            raise UnknownRevision(f"revision {rev} of {sid!r} {what}", sid=sid, rev=rev)
        return found

    def history(self, sid: str) -> Sequence[Revision]:
        """The revisions kept, oldest first (not every revision: see the class)."""
        self.head(sid)
        return [self._revs[r] for r in sorted(self._revs)]

    def sessions(self) -> Sequence[str]:
        """The one session's id (none before it starts)."""
        return [] if self._sid is None else [self._sid]

    def fork(self, sid: str, at: int, new_sid: str, *,
             then: Callable[[Revision], Revision] | None = None) -> Revision:
        """Not supported: a replay store holds one session."""
        raise StoreError("a replay store does not fork sessions", sid=sid)
