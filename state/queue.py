"""The review queue's read path: the sessions that wait for a person, oldest first.

A session waits when it holds (:mod:`claimfsm.state.holds`: a wait state's input or a
pause point's resume). The shipped stores already keep a row per holding session in
``st_timers`` (``waiting = 1``), written by the commit that starts or ends the hold, so
a page of the queue is one query that starts from that small table and reaches each
session's head row and catalog row by key: its cost follows the sessions that wait, never
the sessions in the store.

*Oldest first* orders by the moment the hold began (``since``, as a UTC string that
sorts as time does: :func:`~claimfsm.state.holds.since_key`), which the commit that
starts the hold writes into ``st_timers`` beside the session's due time, under an index:
an edit while the session waits leaves its place in the queue as it was. Ties break on
the session's number, so the order is total and a page is found by key: the cursor is
the last row's ``(since, seq)``. The age filter (``until``) is on ``since`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from claimfsm._base.errors import BadInput
from claimfsm.state.holds import due_key, hold_of, since_key
from claimfsm.state.model import Frozen, Revision, verdict_label

__all__ = [
    "WaitingItem",
    "WaitingPage",
    "WaitingQuery",
    "parse_cursor",
    "queue_filters",
    "scan_waiting",
]

_SEP = "~"  # between the cursor's time and number; no ISO timestamp contains it


class WaitingQuery(Frozen):
    """A page of the queue: ``fsm`` (the state it waits in), ``verdict`` (the verdict
    label it carries, ``none`` for none), ``until`` (only sessions that have waited since
    this time or before: the age filter), ``after`` (the previous page's ``next``)."""

    limit: int = Field(default=50, ge=1, le=500)
    after: str | None = Field(default=None, max_length=200)
    fsm: str | None = Field(default=None, max_length=64)
    verdict: str | None = Field(default=None, max_length=64)
    until: str | None = Field(default=None, max_length=64)


class WaitingItem(Frozen):
    """A waiting session as the queue lists it."""

    seq: int
    sid: str
    claim: str
    fsm: str
    verdict: str | None
    revisions: int
    updated: str
    since: str = ""

    @property
    def cursor(self) -> str:
        """The key of this row in the queue's order."""
        return f"{self.since}{_SEP}{self.seq}"


class WaitingPage(Frozen):
    """A page of the queue and the cursor of the next one (``None``: this was the last)."""

    items: list[WaitingItem]
    next: str | None

    def to_json(self) -> dict[str, Any]:
        """The page as JSON data."""
        return self.model_dump(mode="json")


def parse_cursor(cursor: str) -> tuple[str, int]:
    """``(updated, seq)`` from a cursor; ``BAD_INPUT`` naming ``after`` for anything else."""
    ts, sep, seq = cursor.rpartition(_SEP)
    if not sep or not ts or not seq.isdigit():
        raise BadInput(f"after: {cursor!r} is not a cursor of this queue (a page's next)",
                       field="after")
    return ts, int(seq)


def queue_filters(query: WaitingQuery, mark: str) -> tuple[str, list[Any]]:
    """The conditions (after ``t.waiting = 1``) and parameters of a queue page over the
    head row ``r`` and the catalog ``c``; ``mark`` is the driver's placeholder."""
    where: list[str] = []
    params: list[Any] = []
    if query.fsm is not None:
        where.append(f"r.fsm = {mark}")
        params.append(query.fsm)
    if query.verdict == "none":
        where.append("c.verdict IS NULL")
    elif query.verdict is not None:
        where.append(f"c.verdict = {mark}")
        params.append(query.verdict)
    if query.until is not None:
        where.append(f"t.since <= {mark}")
        params.append(_until(query.until))
    if query.after is not None:
        ts, seq = parse_cursor(query.after)
        # A row value: both stores seek the queue's index to it (an OR would scan).
        where.append(f"(t.since, t.id) > ({mark}, {mark})")
        params.extend((ts, seq))
    return "".join(f" AND {w}" for w in where), params


def _until(until: str) -> str:
    try:
        return due_key(until)
    except ValueError:
        raise BadInput(f"until: {until!r} is not an ISO timestamp", field="until") from None


def page_of(items: list[WaitingItem], limit: int) -> WaitingPage:
    """A page from up to ``limit + 1`` rows read (one more says there is a next page)."""
    more = len(items) > limit
    items = items[:limit]
    return WaitingPage(items=items, next=items[-1].cursor if more else None)


def scan_waiting(sids: Sequence[str], head: Callable[[str], Revision],
                 query: WaitingQuery) -> WaitingPage:
    """The generic queue: every head read (fine for the memory store; the shipped
    backends answer from ``st_timers``)."""
    after = parse_cursor(query.after) if query.after is not None else None
    until = _until(query.until) if query.until is not None else None
    rows: list[WaitingItem] = []
    for seq, sid in enumerate(sids):
        rev = head(sid)
        if hold_of(rev.state) is None:
            continue
        item = WaitingItem(seq=seq, sid=sid, claim=rev.state.claim, fsm=rev.fsm,
                           verdict=verdict_label(rev.state.verdict), revisions=rev.rev + 1,
                           updated=rev.ts, since=since_key(hold_of(rev.state)) or "")
        if _passes(query, item, after, until):
            rows.append(item)
    rows.sort(key=lambda i: (i.since, i.seq))
    return page_of(rows[: query.limit + 1], query.limit)


def _passes(query: WaitingQuery, item: WaitingItem, after: tuple[str, int] | None,
            until: str | None) -> bool:
    if query.fsm is not None and item.fsm != query.fsm:
        return False
    wanted = None if query.verdict == "none" else query.verdict
    if query.verdict is not None and item.verdict != wanted:
        return False
    if until is not None and item.since > until:
        return False
    return after is None or (item.since, item.seq) > after
