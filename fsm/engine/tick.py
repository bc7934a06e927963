"""``claimfsm tick``: advance every session that is due, exactly once.

A session is due when its wait deadline or its retry's due time has passed (both are
stored in its head revision: :mod:`claimfsm.state.holds`). The store lists the due
sessions from its index on due time; each is advanced by
:meth:`~claimfsm.engine.inputs.PeopleMixin.advance`, which commits with compare-and-set
on the head it read: when several tickers race (``claimfsm ui`` and ``claimfsm batch``
tick in the background too), one commit lands and the others skip the session. An
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

if TYPE_CHECKING:
    from claimfsm.engine.driver import Driver
    from claimfsm.state.model import Revision

__all__ = ["TickReport", "Ticker", "tick"]


@dataclass
class TickReport:
    """What one tick did: sessions found due, advanced (by this ticker), skipped (not
    due any more, or another ticker won), and the advanced ids."""

    due: int = 0
    advanced: int = 0
    skipped: int = 0
    sids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """``{"due", "advanced", "skipped", "sids"}``."""
        return {"due": self.due, "advanced": self.advanced, "skipped": self.skipped,
                "sids": self.sids}


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
        # The commits of a chunk are flushed together (one transaction on PostgreSQL):
        # the cost of a tick is its due sessions' reads and writes, not a flush each.
        with store.batch():
            chunk = sids[start:start + _BATCH]
            heads = store.heads(chunk)
            for sid in chunk:
                head = heads.get(sid)
                rev = driver.advance(sid, now, head=head) if head is not None else None
                if rev is None:
                    report.skipped += 1
                    continue
                report.advanced += 1
                report.sids.append(sid)
                advanced.append(rev)
    if run:
        for rev in advanced:
            _run_on(driver, rev, max_steps)
    return report


#: Due sessions advanced per batch of commits (bounds how long a batch holds its rows).
_BATCH = 100


def _run_on(driver: Driver, rev: Revision, max_steps: int) -> None:
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
