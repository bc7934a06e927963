"""The session catalog: one summary line per session (claim, state, verdict, revisions,
last update), listed newest first with keyset paging and filters; and one page of a
session's history.

This is what a sessions page or a script that lists sessions reads. Backends with an
index of their own (SQLite) answer from it without decoding revisions; the generic
:func:`scan_summaries` here reads each session's head and serves the memory store and any
backend without one.

A history page is revisions ``start .. start + limit - 1``, oldest first. Revision numbers
are contiguous from 0, so a revision number is the paging key: a backend seeks to it
instead of reading and skipping the revisions before it, and a page costs time in
proportion to its length (plus, for a delta-encoded backend, the few rows back to the
nearest snapshot), never to the length of the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from claimfsm._base.errors import BadInput
from claimfsm.state.holds import hold_of
from claimfsm.state.model import Frozen, Revision, verdict_label

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "MAX_PAGE",
    "HistoryPage",
    "SessionSummary",
    "SummaryPage",
    "SummaryQuery",
    "check_page",
    "like_pattern",
    "matches",
    "page_of",
    "read_page",
    "scan_summaries",
    "sql_filters",
    "status",
    "summary_of",
    "verdict_label",
]

#: The largest page a listing returns.
MAX_PAGE = 500


class SummaryQuery(Frozen):
    """Which sessions to list: newest first, ``limit`` at a time, strictly older than
    ``before`` (the ``next`` cursor of the previous page). ``q`` matches claim text
    (case-insensitive substring); ``fsm`` and ``verdict`` match exactly (``verdict="none"``
    lists sessions without one)."""

    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    before: int | None = Field(default=None, ge=0)
    q: str | None = Field(default=None, max_length=1000)
    fsm: str | None = Field(default=None, max_length=64)
    verdict: str | None = Field(default=None, max_length=64)
    #: ``WAITING``: only sessions that wait for a person (input or resume).
    status: Literal["WAITING"] | None = None


class SessionSummary(Frozen):
    """One session at its head. ``seq`` is its position in creation order (the paging key)."""

    seq: int
    sid: str
    claim: str
    fsm: str
    verdict: str | None
    revisions: int
    updated: str
    #: ``WAITING`` (it holds for a person), ``FINISHED`` (DONE or FAILED) or ``RUNNING``.
    status: str = "RUNNING"


class SummaryPage(Frozen):
    """A page of summaries and the cursor of the next one (``None``: this was the last)."""

    items: list[SessionSummary]
    next: int | None

    def to_json(self) -> dict[str, Any]:
        """The page as JSON data."""
        return self.model_dump(mode="json")


def like_pattern(text: str) -> str:
    """A SQL ``LIKE ... ESCAPE '\\'`` pattern matching ``text`` anywhere, literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def sql_filters(query: SummaryQuery, *, mark: str, like: str,
                lazy_claims: bool = False) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (or ``""``) and its parameters for a listing query over
    ``st_sessions s``, its head row ``r`` and the catalog ``c``. ``mark`` is the driver's
    placeholder, ``like`` its case-insensitive match operator. With ``lazy_claims`` a
    claim not in the catalog yet (NULL) passes the text filter, for the caller to check
    once it has read it."""
    where: list[str] = []
    params: list[Any] = []
    if query.before is not None:
        where.append(f"s.id < {mark}")
        params.append(query.before)
    if query.fsm is not None:
        where.append(f"r.fsm = {mark}")
        params.append(query.fsm)
    if query.status == "WAITING":
        where.append("t.waiting = 1")
    if query.verdict == "none":
        where.append("c.verdict IS NULL")
    elif query.verdict is not None:
        where.append(f"c.verdict = {mark}")
        params.append(query.verdict)
    if query.q:
        test = f"c.claim {like} {mark} ESCAPE '\\'"
        where.append(f"(c.claim IS NULL OR {test})" if lazy_claims else test)
        params.append(like_pattern(query.q))
    return (" WHERE " + " AND ".join(where) if where else ""), params


def summary_of(seq: int, head: Revision) -> SessionSummary:
    """The summary of a session from its head revision."""
    return SessionSummary(seq=seq, sid=head.sid, claim=head.state.claim, fsm=head.fsm,
                          verdict=verdict_label(head.state.verdict), revisions=head.rev + 1,
                          updated=head.ts,
                          status=status(head.fsm, hold_of(head.state) is not None))


_FINALS = frozenset({"DONE", "FAILED"})  # the claim machine's final states


def status(fsm: str, waiting: bool) -> str:
    """A listed session's status (see :class:`SessionSummary`)."""
    return "WAITING" if waiting else "FINISHED" if fsm in _FINALS else "RUNNING"


def matches(query: SummaryQuery, summary: SessionSummary) -> bool:
    """Whether ``summary`` passes the query's filters (not its paging)."""
    if query.fsm is not None and summary.fsm != query.fsm:
        return False
    if query.status is not None and summary.status != query.status:
        return False
    if query.verdict is not None:
        wanted = None if query.verdict == "none" else query.verdict
        if summary.verdict != wanted:
            return False
    return not query.q or query.q.casefold() in summary.claim.casefold()


def scan_summaries(sids: Sequence[str], head: Callable[[str], Revision],
                   query: SummaryQuery) -> SummaryPage:
    """The generic listing over ``sids`` (creation order) and a head reader: newest first,
    one head read per session looked at (fine for the memory store; a backend with many
    sessions answers from an index)."""
    start = len(sids) if query.before is None else min(query.before, len(sids))
    items: list[SessionSummary] = []
    seq = start
    while seq > 0 and len(items) <= query.limit:
        seq -= 1
        summary = summary_of(seq, head(sids[seq]))
        if matches(query, summary):
            items.append(summary)
    more = len(items) > query.limit
    items = items[: query.limit]
    return SummaryPage(items=items, next=items[-1].seq if more else None)


# -- history pages -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Revisions ``items`` (oldest first) of a session with ``total`` revisions; ``next``
    is the first revision of the following page, ``None`` when this page ends at the head.

    A plain dataclass, not a model: its revisions come from the store, already checked.
    """

    items: Sequence[Revision]
    total: int
    next: int | None

    @classmethod
    def of(cls, items: Sequence[Revision], start: int, limit: int, head: int) -> HistoryPage:
        """The page ``items`` read for ``start``/``limit`` of a session whose head is
        ``head``."""
        end = start + limit  # first revision after the page
        return cls(items, head + 1, end if end <= head else None)


def check_page(start: int, limit: int) -> None:
    """Refuse a page that no session has: ``start`` below 0, ``limit`` below 1."""
    if start < 0:
        raise BadInput(f"start: {start} is negative (revisions count from 0)", field="start")
    if limit < 1:
        raise BadInput(f"limit: {limit}, a page holds at least one revision", field="limit")


def page_of(revisions: Sequence[Revision], start: int, limit: int) -> HistoryPage:
    """The page of a whole history already in hand (the generic path of
    :meth:`~claimfsm.state.store.StateStore.history_page`)."""
    check_page(start, limit)
    return HistoryPage.of(revisions[start: start + limit], start, limit, len(revisions) - 1)


def read_page(start: int, limit: int, head: int, cached: Callable[[int], Revision | None],
              fetch: Callable[[int, int], list[Revision]]) -> HistoryPage:
    """The page ``start``/``limit`` of a session whose head is ``head``, by key: from a
    store's cache when it holds every revision of the page, else ``fetch(start, last)``
    (the rows from the nearest snapshot at or below ``start``, decoded from there)."""
    check_page(start, limit)
    last = min(head, start + limit - 1)
    if start > head:
        return HistoryPage.of((), start, limit, head)
    hits = [cached(rev) for rev in range(start, last + 1)]
    if all(hit is not None for hit in hits):
        return HistoryPage.of([hit for hit in hits if hit is not None], start, limit, head)
    return HistoryPage.of(fetch(start, last), start, limit, head)
