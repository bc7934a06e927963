"""The group committer of a SQLite store in ``group`` durability: one thread that commits
the jobs of concurrent writers in batches, one transaction and one fsync per batch. Its own
module because only that durability mode starts it; the transaction it runs each batch in
is :func:`claimfsm.state.sqlite.db.transaction`.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite.db import transaction

__all__ = ["GroupCommitter"]

T = TypeVar("T")


@dataclass(eq=False)
class _Job:
    fn: Callable[[sqlite3.Connection], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


class GroupCommitter:
    """One thread that commits queued write jobs in batches: one transaction and one
    fsync per batch. :meth:`submit` returns only once its batch is durable.

    Each job runs in its own savepoint, so a job that raises (a lost compare-and-set)
    leaves nothing behind and does not spoil the others in its batch.
    """

    def __init__(
        self, opener: Callable[[], sqlite3.Connection], budget: float, window: float = 0.0
    ) -> None:
        self._opener = opener
        self._budget = budget
        self._window = window
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()
        self.batches = 0
        self.jobs = 0
        self._thread = threading.Thread(target=self._run, name="st-group-commit", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Queue ``fn`` for the next batch and wait until that batch has committed."""
        job = _Job(fn)
        with self._lock:
            if self._closed:
                raise StoreError("store is closed")
            self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        result: T = job.result
        return result

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = self._opener()
        except BaseException as exc:  # fail every job rather than hang its caller
            self._drain_with(exc)
            return
        try:
            stop = False
            while not stop:
                first = self._queue.get()
                if first is None:
                    break
                if self._window > 0:
                    time.sleep(self._window)
                batch = [first]
                while True:
                    try:
                        job = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if job is None:
                        stop = True
                        break
                    batch.append(job)
                self._commit(conn, batch)
        finally:
            conn.close()

    def _drain_with(self, exc: BaseException) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            job.error = exc
            job.done.set()

    def _commit(self, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        def run_all(c: sqlite3.Connection) -> list[tuple[Any, BaseException | None]]:
            outcomes: list[tuple[Any, BaseException | None]] = []
            for job in batch:
                c.execute("SAVEPOINT job")
                try:
                    outcome: tuple[Any, BaseException | None] = (job.fn(c), None)
                except Exception as exc:
                    c.execute("ROLLBACK TO job")
                    outcome = (None, exc)
                c.execute("RELEASE job")
                outcomes.append(outcome)
            return outcomes

        try:
            outcomes = transaction(conn, run_all, self._budget)
        except Exception as exc:
            outcomes = [(None, exc)] * len(batch)
        self.batches += 1
        self.jobs += len(batch)
        for job, (result, error) in zip(batch, outcomes, strict=True):
            job.result, job.error = result, error
            job.done.set()
