"""How the evidence index opens its SQLite file.

A new index, or one that lacks a table of this version, is opened for writing at once.
An index that is all there is read without writing a byte of any file (no ``-wal`` or
``-shm`` created, no checkpoint; :class:`~claimfsm._base.sqlite_read.ReadOnlyLink`) until
its first write opens the file for writing: a command that only reads it, or a UI that is
only looked at, leaves the file as it was.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from claimfsm._base.sqlite_read import ReadOnlyLink, connect_writer, read_mode
from claimfsm.skills.tools.index_schema import SCHEMA

__all__ = ["SCHEMA_NAMES", "connect_for_writing", "reader_for"]

SCHEMA_NAMES = frozenset(re.findall(r"IF NOT EXISTS (\w+)", " ".join(SCHEMA)))
"""Every table, index and trigger of the index: all there, nothing needs writing."""


def connect_for_writing(path: str | Path) -> sqlite3.Connection:
    """A connection that may write ``path``, in WAL mode."""
    conn = connect_writer(str(path), check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=5000")
    except BaseException:
        conn.close()
        raise
    return conn


def reader_for(path: str | Path) -> ReadOnlyLink | None:
    """A link that reads the complete index at ``path`` without writing; ``None`` when
    the index must be opened for writing (no file yet, a table missing) or reading it
    would take a private copy (a WAL without its ``-shm``: a writer opens it itself)."""
    text = os.fspath(path)
    if text == ":memory:" or not os.path.isfile(text) or os.path.getsize(text) == 0:
        return None
    if read_mode(text) not in ("main", "shared"):
        return None
    link = ReadOnlyLink(text)
    try:
        names = link.run(lambda c: {r[0] for r in c.execute("SELECT name FROM sqlite_master")})
    except BaseException:
        link.close()
        raise
    if names >= SCHEMA_NAMES:
        return link
    link.close()
    return None
