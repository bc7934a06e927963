"""A batch of SQLite writes in one transaction (:meth:`StateStore.batch`): ``claimfsm
tick`` commits the due sessions of a chunk under one ``BEGIN IMMEDIATE`` and one
``COMMIT``, instead of a transaction (and a turn of the writers' lock file) each.

Each write inside runs in its own savepoint, so one that raises (a lost compare-and-set)
leaves nothing behind and the others go on; an error that ends the batch rolls all of it
back, so a kill at any point leaves every session at the revision it had before the batch
or after it, never in between.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

from claimfsm.state.sqlite.db import retrying

__all__ = ["begin", "end", "savepoint"]

T = TypeVar("T")


def savepoint(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn`` inside the open transaction, undone alone if it raises."""
    conn.execute("SAVEPOINT st_write")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK TO st_write")
        conn.execute("RELEASE st_write")
        raise
    conn.execute("RELEASE st_write")
    return result


def begin(conn: sqlite3.Connection, budget: float) -> None:
    """Take the write lock up front (as every write transaction of the store does)."""
    retrying(lambda: conn.execute("BEGIN IMMEDIATE"), budget)


def end(conn: sqlite3.Connection, ok: bool) -> None:
    """Commit the batch, or roll it back when it ended with an error."""
    if ok:
        conn.execute("COMMIT")
    elif conn.in_transaction:
        conn.execute("ROLLBACK")
