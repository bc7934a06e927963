"""Retention: delete the sessions that finished before a date (``claimfsm prune``).

A session is *finished* when its head is in a final state (``DONE``, ``FAILED``, or the
final states of the machine the caller names); its finishing time is that head's
timestamp. A session still running, waiting or retrying is never pruned, whatever its
age. The deletions go in batches, each one transaction that also re-checks every
session's head (a session stepped or rewound since it was listed is left alone), and
the blobs no remaining revision references are swept once at the end: a prune killed
half-way leaves whole batches deleted and the rest untouched, and the next prune or
``compact`` sweeps what it left.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from datetime import UTC, datetime

from pydantic import Field

from claimfsm._base.errors import BadInput
from claimfsm.state.model import Frozen
from claimfsm.state.store import StateStore

__all__ = ["FINAL_STATES", "PruneReport", "parse_cutoff", "prune", "when"]

#: The default machine's final states; a custom machine passes its own.
FINAL_STATES: tuple[str, ...] = ("DONE", "FAILED")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_cutoff(text: str, field: str = "--finished-before") -> datetime:
    """``text`` as an aware UTC time: a day (``2026-11-01``, its midnight UTC) or an ISO
    8601 time (``2026-11-01T12:00:00+01:00``; without an offset, UTC). Anything else is
    ``BAD_INPUT`` naming ``field``."""
    raw = text.strip()
    if not raw:
        raise BadInput(f"{field}: empty; give a date (YYYY-MM-DD) or an ISO 8601 time",
                       field=field)
    try:
        if _DAY.match(raw):
            return datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=UTC)
        if "T" not in raw and " " not in raw:
            raise ValueError("not a date")
        return _aware(datetime.fromisoformat(raw))
    except ValueError:
        raise BadInput(f"{field}: {text!r} is not a date (YYYY-MM-DD) or an ISO 8601 time "
                       "(YYYY-MM-DDTHH:MM:SS, optional offset)", field=field) from None


def when(ts: str) -> datetime | None:
    """A revision's timestamp as an aware time (naive: UTC); ``None`` when unreadable."""
    try:
        return _aware(datetime.fromisoformat(ts))
    except ValueError:
        return None


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class PruneReport(Frozen):
    """What :func:`prune` found and did. ``sessions``: the ids that matched (finished
    before ``before``), oldest first by creation; ``deleted``: how many went (0 with
    ``dry_run``); ``skipped``: sid -> why one was left (``moved``: stepped or rewound
    since it was listed; ``gone``: deleted by someone else meanwhile)."""

    before: str
    dry_run: bool
    states: list[str]
    matched: int = Field(ge=0)
    deleted: int = Field(ge=0)
    blobs_dropped: int = Field(ge=0)
    skipped: dict[str, str] = Field(default_factory=dict)
    sessions: list[str] = Field(default_factory=list)


def prune(
    store: StateStore, before: datetime, *, actor: str, at: str,
    states: Collection[str] = FINAL_STATES, dry_run: bool = False, batch: int = 500,
    progress: Callable[[int, int], None] | None = None,
) -> PruneReport:
    """Delete every session whose head is in ``states`` with a timestamp before
    ``before`` (tombstones by ``actor`` at ``at``); with ``dry_run`` only list them.
    ``progress(done, total)`` is called after each batch."""
    if batch < 1:
        raise BadInput("batch must be at least 1", field="batch")
    chosen = []
    for ended in store.ended(states):
        moment = when(ended.ts)
        if moment is not None and moment < before:
            chosen.append(ended)
    names = [e.sid for e in chosen]
    cut, finals = before.isoformat(), sorted(states)
    if dry_run:
        return PruneReport(before=cut, dry_run=True, states=finals, matched=len(chosen),
                           deleted=0, blobs_dropped=0, sessions=names)
    deleted, skipped = 0, {}
    for start in range(0, len(chosen), batch):
        part = chosen[start: start + batch]
        done = store.erase({e.sid: e.head for e in part}, actor=actor, at=at, sweep=False)
        deleted += len(done.tombstones)
        skipped.update(done.skipped)
        if progress is not None:
            progress(start + len(part), len(chosen))
    # Always: a prune killed before its sweep left blobs behind; this one drops them.
    dropped = store.sweep_blobs()
    return PruneReport(before=cut, dry_run=False, states=finals, matched=len(chosen),
                       deleted=deleted, blobs_dropped=dropped, skipped=skipped, sessions=names)
