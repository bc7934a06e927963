"""SQLite plumbing for :class:`claimfsm.state.sqlite.store.SQLiteStore`: connections,
bounded retry on SQLITE_BUSY, write transactions, the store's errors and the schema
version. The ``st_`` tables and their upgrades are :mod:`claimfsm.state.sqlite.schema`;
the group committer is :mod:`claimfsm.state.sqlite.group`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import Literal, TypeVar

from claimfsm._base.errors import ErrorCode
from claimfsm._base.sqlite_read import connect_writer
from claimfsm.state.errors import StoreError

__all__ = [
    "DURABILITY_MODES",
    "FULL_CHECKPOINT_PAGES",
    "HEAD",
    "SCHEMA_VERSION",
    "ChainBroken",
    "CorruptStore",
    "Durability",
    "StoreBusy",
    "connect",
    "is_busy",
    "retrying",
    "sync_wal",
    "transaction",
]

Durability = Literal["full", "normal", "group"]
DURABILITY_MODES: tuple[str, ...] = ("full", "normal", "group")
#: The ``st_`` schema this version writes (state/sqlite/schema.py creates and upgrades
#: a file to it); readers check it too.
SCHEMA_VERSION = "7"
#: ``k`` of a session's head row (param 1: the session number << 32). A session's rows
#: are one key range, so this is one seek down the table's b-tree: the head is never
#: stored, and a commit writes one row and nothing else.
HEAD = "(SELECT max(k) FROM st_revisions WHERE k BETWEEN ?1 AND ?1 + 4294967295)"
#: WAL pages after which a ``full`` commit checkpoints (SQLite's default: 1000). An
#: fdatasync that grows the WAL file also commits its new size to the file system's
#: journal; one that rewrites pages of a WAL already that long does not. A checkpoint
#: lets the next commit start the WAL over from its first page, so with fsync per commit
#: a shorter WAL means far fewer growing commits for a few more checkpoints
#: (docs/bench.md, "The commit path"). ``normal`` syncs only at checkpoints: it keeps
#: the default, which makes fewer of them.
FULL_CHECKPOINT_PAGES = 256
T = TypeVar("T")


class StoreBusy(StoreError):
    """The database stayed locked by other writers for longer than the store's budget."""

    code = ErrorCode.STORE_BUSY


class CorruptStore(StoreError):
    """Stored bytes do not decode or do not match their hash (run fsck)."""

    code = ErrorCode.STORE_CORRUPT


class ChainBroken(StoreError):
    """An operation that copies revisions found a broken hash chain in its source."""

    code = ErrorCode.CHAIN_BROKEN


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLITE_BUSY or SQLITE_LOCKED (another connection holds a lock)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc)
    return "locked" in text or "busy" in text


def retrying(fn: Callable[[], T], budget: float) -> T:
    """Run ``fn``; on SQLITE_BUSY/LOCKED sleep with capped exponential backoff and try
    again, for at most ``budget`` seconds, then raise :class:`StoreBusy`.
    """
    deadline = time.monotonic() + budget
    delay = 0.001
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() + delay > deadline:
                raise StoreBusy(f"database stayed locked for {budget:g}s") from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def transaction(
    conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], budget: float, *,
    synced: bool = True,
) -> T:
    """Run ``fn`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (retried whole on BUSY).

    Taking the write lock up front means a writer never upgrades a read transaction,
    which is what makes SQLITE_BUSY retryable instead of a deadlock.

    ``synced=False`` (only on a WAL connection at ``synchronous=FULL``): this one commit
    does not fsync the WAL; it becomes durable with the connection's next commit, whose
    fsync of the WAL covers every frame before its own, or the next checkpoint. WAL
    recovery keeps a transaction whole or drops it, so a power cut before then loses
    all of it, never part (docs/storage.md, "Durability modes").
    """

    def attempt() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    if synced:
        return retrying(attempt, budget)
    conn.execute("PRAGMA synchronous=NORMAL")
    try:
        return retrying(attempt, budget)
    finally:
        conn.execute("PRAGMA synchronous=FULL")


def sync_wal(path: str) -> None:
    """fdatasync the WAL of the database at ``path``: every frame committed to it so far
    is then durable. A WAL that is gone was checkpointed into the database file, which
    the checkpoint synced."""
    try:
        # Writable: Windows syncs only a descriptor open for writing (nothing is written).
        fd = os.open(f"{path}-wal", os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"--db: cannot sync the WAL of {path}: {exc}", field="db",
                         code=ErrorCode.STORE_IO) from exc
    try:
        getattr(os, "fdatasync", os.fsync)(fd)  # macOS has no fdatasync
    except OSError as exc:
        raise StoreError(f"--db: cannot sync the WAL of {path}: {exc}", field="db",
                         code=ErrorCode.STORE_IO) from exc
    finally:
        os.close(fd)


def connect(path: str, durability: Durability, budget: float) -> sqlite3.Connection:
    """A connection in WAL mode with the durability's ``synchronous`` level."""
    conn = connect_writer(
        path, timeout=min(budget, 5.0), isolation_level=None, check_same_thread=False,
        cached_statements=256,
    )
    try:
        retrying(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone(), budget)
        level = "NORMAL" if durability == "normal" else "FULL"
        conn.execute(f"PRAGMA synchronous={level}")
        conn.execute(f"PRAGMA busy_timeout={int(min(budget, 5.0) * 1000)}")
        if durability == "full":
            conn.execute(f"PRAGMA wal_autocheckpoint={FULL_CHECKPOINT_PAGES}")
    except BaseException:
        conn.close()
        raise
    return conn
