"""The revision-stamped store interface that every backend implements.

A session is an append-only chain of revisions ``0, 1, 2, ...``. ``commit`` is
compare-and-set on the head: a stale writer gets :class:`RevConflict`, never a lost
update. Nothing is edited in place; rewind and fork add revisions or sessions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from state.model import Revision

__all__ = ["StateStore"]


class StateStore(ABC):
    """Backends: :class:`state.memory.MemoryStore` and :class:`state.sqlite.SQLiteStore`."""

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

    @abstractmethod
    def sessions(self) -> Sequence[str]:
        """Every session id, in creation order."""

    @abstractmethod
    def fork(self, sid: str, at: int, new_sid: str) -> Revision:
        """A new session ``new_sid`` whose history is a copy of ``sid``'s revisions
        ``0..at`` (states re-stamped with ``new_sid``); returns its head. The source
        session is untouched.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, not every backend needs it
        """Release resources (connections, files)."""

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
