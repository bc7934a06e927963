"""What a deletion leaves behind: the :class:`Tombstone` of an erased session, and what a
store's :meth:`~claimfsm.state.store.StateStore.erase` reports.

A tombstone keeps no content of the session: its id, when and by whom it was deleted,
its head (revision number and state) and the chain hash of its last revision, so an
audit can tell that a session existed, that it was removed on purpose, and which chain
it was (a record exported before the deletion carries the same hash on its last line).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import Field

from claimfsm.state.model import Frozen

__all__ = ["EndedSession", "EraseReport", "Tombstone"]


class Tombstone(Frozen):
    """One deleted session. ``head`` is its last revision number and ``fsm`` that
    revision's state; ``last_hash`` the revision's chain hash (hex; ``None`` for a store
    without hashes, the memory store)."""

    sid: str
    deleted_at: str
    actor: str
    head: int = Field(ge=0)
    fsm: str
    last_hash: str | None = None


class EraseReport(Frozen):
    """What one :meth:`~claimfsm.state.store.StateStore.erase` did: the tombstones written,
    and the sessions left alone (``skipped``: sid -> ``"gone"``, no such live session, or
    ``"moved"``, its head is no longer the one asked for)."""

    tombstones: list[Tombstone] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)
    blobs_dropped: int = 0


class EndedSession(NamedTuple):
    """A session whose head is in a final state: its id, head revision, state and the
    head's timestamp (when it ended)."""

    sid: str
    head: int
    fsm: str
    ts: str
