"""``fsck``: check every session's chain in a store and report the first broken link of
each (hash mismatch, missing parent, gap in revision numbers, undecodable row, missing or
corrupt blob, head not at the last revision). Deleted sessions are not damage: their
tombstones are listed apart (``deleted``), and every other session verifies as before.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from claimfsm.state.errors import StoreError
from claimfsm.state.store import StateStore
from claimfsm.state.tombstone import Tombstone

__all__ = ["FsckProblem", "FsckReport", "fsck"]


class FsckProblem(BaseModel):
    """One broken link: where (``sid``, ``rev``), a stable code and a message for people."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    sid: str
    rev: int | None
    problem: str
    detail: str = ""


class FsckReport(BaseModel):
    """The outcome of :func:`fsck`; ``ok`` when ``problems`` is empty."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    ok: bool
    sessions: int = Field(ge=0)
    revisions: int = Field(ge=0)
    problems: list[FsckProblem] = Field(default_factory=list)
    deleted: list[Tombstone] = Field(default_factory=list)


def fsck(store: StateStore) -> FsckReport:
    """Verify every session of ``store`` (read-only) and collect the problems found."""
    problems: list[FsckProblem] = []
    revisions = 0
    sids = list(store.sessions())
    for sid in sids:
        try:
            check = store.verify_chain(sid)
        except StoreError as exc:
            problems.append(FsckProblem(sid=sid, rev=None, problem=exc.code, detail=exc.msg))
            continue
        revisions += check.revisions
        if check.problem is not None:
            problems.append(
                FsckProblem(sid=sid, rev=check.rev, problem=check.problem, detail=check.detail)
            )
    return FsckReport(ok=not problems, sessions=len(sids), revisions=revisions, problems=problems,
                      deleted=list(store.tombstones()))
