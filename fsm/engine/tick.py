"""``claimfsm tick``: advance every session that is due, exactly once.

A session is due when its wait deadline or its retry's due time has passed (both are
stored in its head revision: :mod:`claimfsm.state.holds`). The store lists the due
sessions from its index on due time; each is advanced by
:meth:`~claimfsm.engine.inputs.PeopleMixin.advance`, which commits with compare-and-set
on the head it read: when several tickers race (``claimfsm ui`` and ``claimfsm batch``
tick in the background too), one commit lands and the others skip the session. The
passed deadlines of a chunk of due sessions are committed together
(:meth:`~claimfsm.state.store.StateStore.commit_all`: one transaction on SQLite, one
pipelined transaction on PostgreSQL), each still compare-and-set on its own head. An
advanced session then runs on to its next stop (a final state, a hold, a retry that is
not due yet), never sleeping: nothing waits in a process for a session's time to come.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from claimfsm.engine.step import iso
from claimfsm.state.holds import due_key, hold_of
from claimfsm.state.model import Revision

if TYPE_CHECKING:
    from claimfsm.engine.driver import Driver

__all__ = ["TickReport", "Ticker", "run_on", "tick"]


@dataclass
class TickReport:
    """What one tick did: sessions found due, advanced (by this ticker), skipped (not
    due any more, or another writer won), the advanced ids, and ``conflicts``: the
    skipped ones whose commit lost its compare-and-set to another writer."""

    due: int = 0
    advanced: int = 0
    skipped: int = 0
    sids: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """``{"due", "advanced", "skipped", "sids", "conflicts"}``."""
        return {"due": self.due, "advanced": self.advanced, "skipped": self.skipped,
                "sids": self.sids, "conflicts": self.conflicts}


def tick(driver: Driver, *, limit: int = 1000, now: datetime | None = None,
         run: bool = True, max_steps: int = 1000) -> TickReport:
    """Advance up to ``limit`` due sessions (earliest first); with ``run``, each one
    advanced runs on to its next stop."""
    now = now or driver.clock.now()
    store = driver.store
    sids = store.due(due_key(iso(now)), limit)
    report = TickReport(due=len(sids))
    advanced: list[Revision] = []
    for start in range(0, len(sids), _BATCH):
        chunk = sids[start:start + _BATCH]
        heads = store.heads(chunk)
        timeouts: list[tuple[Revision, int]] = []
        retries: list[Revision] = []
        for sid in chunk:
            head = heads.get(sid)
            if head is None or not driver.is_due(head, now):
                report.skipped += 1  # gone, or moved on since the due query
            elif hold_of(head.state) is None:
                retries.append(head)
            elif (rev := driver.timed_out(head, now)) is not None:
                timeouts.append((rev, head.rev))
            else:
                report.skipped += 1
        # The chunk's deadlines land together: one transaction (one round trip on
        # PostgreSQL); a session another writer moved meanwhile is refused alone.
        for (rev, _), outcome in zip(timeouts, store.commit_all(timeouts), strict=True):
            _count(report, advanced, rev.sid, outcome if isinstance(outcome, Revision)
                   else None, lost=True)
        # A due retry runs its skill: each commits on its own, holding no transaction
        # open while the skill works.
        for head in retries:
            _count(report, advanced, head.sid, driver.advance(head.sid, now, head=head),
                   lost=False)
    if run:
        for rev in advanced:
            run_on(driver, rev, max_steps)
    return report


def _count(report: TickReport, advanced: list[Revision], sid: str,
           rev: Revision | None, *, lost: bool) -> None:
    if rev is None:
        report.skipped += 1
        if lost:
            report.conflicts.append(sid)
        return
    report.advanced += 1
    report.sids.append(sid)
    advanced.append(rev)


#: Due sessions advanced per batch of commits (bounds how long a batch holds its rows).
_BATCH = 100


def run_on(driver: Driver, rev: Revision, max_steps: int = 1000) -> None:
    """Run the session of ``rev`` (just advanced) on to its next stop: a final state, a
    hold, a retry that is not due yet."""
    finals = driver.definition.finals
    sid = rev.sid
    head = rev
    for _ in range(max_steps):
        retry = head.state.retry
        pending = retry is not None and retry.next_at and retry.state == head.fsm
        if head.fsm in finals or hold_of(head.state) is not None or pending:
            return
        result = driver.step(sid)
        if result.revision is None:
            return
        head = result.revision


class Ticker:
    """A background thread that ticks every ``interval`` seconds (``claimfsm ui`` and
    ``claimfsm batch``): one query on the store's due index per tick, however many
    sessions wait. Errors of one tick are kept in ``errors`` and the next tick runs."""

    def __init__(self, driver: Driver, interval: float = 1.0, limit: int = 1000,
                 guard: Callable[[Callable[[], TickReport]], TickReport] | None = None
                 ) -> None:
        # ``guard`` runs each tick (the UI's service lock: one writer of its engine).
        self.driver, self.interval, self.limit = driver, interval, limit
        self.guard = guard or (lambda fn: fn())
        self.errors: list[str] = []
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="claimfsm-tick", daemon=True)

    def start(self) -> Ticker:
        """Start ticking; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the current tick."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.guard(lambda: tick(self.driver, limit=self.limit))
            except Exception as exc:  # a store that is busy or gone: try again next time
                self.errors = [*self.errors[-9:], f"{type(exc).__name__}: {exc}"]
            self.ticks += 1
