"""A test's look at a database file behind the store's back, closed at once.

Python 3.11's ``sqlite3.Connection`` sits in a reference cycle with its statement cache,
so one left to the collector closes at some later collection; closing as the file's last
connection, it deletes the WAL under a store opened since ("unable to open database
file"). tests/test_suite_hygiene.py refuses the inline ``sqlite3.connect(...).execute``.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any


def peek(db: Path | str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The rows ``sql`` reads from ``db``, on a connection closed before returning."""
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql, params).fetchall()
