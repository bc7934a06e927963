"""SQLite plumbing for :class:`claimfsm.state.sqlite.store.SQLiteStore`: connections, the ``st_``
schema, bounded retry on SQLITE_BUSY, write transactions and the group committer.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

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
    "GroupCommitter",
    "StoreBusy",
    "connect",
    "init_schema",
    "is_busy",
    "retrying",
    "sync_wal",
    "transaction",
]

Durability = Literal["full", "normal", "group"]
DURABILITY_MODES: tuple[str, ...] = ("full", "normal", "group")
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

_SCHEMA = (
    # WITHOUT ROWID: the key is the table (a rowid table would keep a second b-tree, an
    # index on ``key``, one more page in every file; files made before keep theirs).
    "CREATE TABLE IF NOT EXISTS st_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
    " WITHOUT ROWID",
    # id gives creation order and the high half of st_revisions.k. ``shares``: what a fork
    # shares with its parents (state/sqlite/shares.py), NULL for every other session; in
    # this row, which a fork writes anyway, so that sharing writes no page of its own.
    "CREATE TABLE IF NOT EXISTS st_sessions (id INTEGER PRIMARY KEY, sid TEXT NOT NULL UNIQUE,"
    " shares TEXT)",
    # k = session id << 32 | rev: one b-tree, and a session is one contiguous key range.
    "CREATE TABLE IF NOT EXISTS st_revisions ("
    " k INTEGER PRIMARY KEY, parent_rev INTEGER, kind INTEGER NOT NULL,"
    " fsm TEXT NOT NULL, skill TEXT, ts TEXT NOT NULL,"
    " body BLOB NOT NULL, extra BLOB NOT NULL, hash BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS st_blobs ("
    " h BLOB PRIMARY KEY, z INTEGER NOT NULL, data BLOB NOT NULL)",
    # What session listings read without decoding (state/sqlite/catalog.py): a row per
    # session that has a verdict (written by the commit that sets it) or has been listed
    # (its claim, filled by the reader).
    # ``parent``...: a fork's parent, written by the fork's own commit (state/sqlite/forks.py).
    "CREATE TABLE IF NOT EXISTS st_catalog (id INTEGER PRIMARY KEY, claim TEXT, verdict TEXT,"
    " parent TEXT, parent_rev INTEGER, forked TEXT)",
    # One row per deleted session (state/sqlite/erase.py), id = its st_sessions.id.
    "CREATE TABLE IF NOT EXISTS st_tombstones (id INTEGER PRIMARY KEY, sid TEXT NOT NULL,"
    " deleted_at TEXT NOT NULL, actor TEXT NOT NULL, head INTEGER NOT NULL,"
    " fsm TEXT NOT NULL, hash BLOB NOT NULL)",
    # Sessions that hold (wait for a person) or are due (a wait deadline, a retry): a row
    # only while they are, written by the commit that changes it (state/holds.py), so a
    # session that never waits writes nothing here; ``claimfsm tick`` seeks the index.
    # ``since``: when a holding session's hold began, the review queue's order (its own
    # index, st_timers_queue, is made by init_schema once the column is there).
    "CREATE TABLE IF NOT EXISTS st_timers (id INTEGER PRIMARY KEY, due TEXT,"
    " waiting INTEGER NOT NULL, since TEXT)",
    "CREATE INDEX IF NOT EXISTS st_timers_due ON st_timers (due, id) WHERE due IS NOT NULL",
    # API keys (state/keys.py): a digest per key, never the key; revoked rows stay.
    "CREATE TABLE IF NOT EXISTS st_keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL, key_id TEXT NOT NULL UNIQUE, salt TEXT NOT NULL,"
    " digest TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT,"
    " created_by TEXT, revoked_by TEXT)",
)
# 1 once ``st_keys`` records who added and revoked each key.
_KEY_ACTORS = "SELECT count(*) FROM pragma_table_info('st_keys') WHERE name = 'revoked_by'"
# The review queue's order: waiting sessions by when their hold began.
_QUEUE_INDEX = ("CREATE INDEX IF NOT EXISTS st_timers_queue ON st_timers (since, id)"
                " WHERE waiting = 1")
# Version 1 kept each session's head in ``st_sessions.head``, moved by this trigger: a
# second b-tree page written by every commit (~10 us of a ~100 us step). Version 2 finds
# the head from the keys (:data:`HEAD`); a version-1 file is upgraded on its first
# writable open (read-only, it is read as it is: nothing here reads the old column).
_FROM_V1 = (
    "DROP TRIGGER IF EXISTS st_head",
    "ALTER TABLE st_sessions DROP COLUMN head",
    "UPDATE st_meta SET value = '2' WHERE key = 'schema'",
)
# Version 3 writes snapshots as arrays of field values (state.codec.snapshot_body); its
# readers take version 2's named snapshots too, so upgrading only changes the number,
# which makes an older claimfsm refuse the file rather than fail on the new rows.
_FROM_V2 = ("UPDATE st_meta SET value = '3' WHERE key = 'schema'",)
# Version 4 stores the engine's UTC commit times as 7-byte blobs (state/sqlite/stamp.py);
# any other ``ts`` stays text, as in every row before, and readers take both, so again
# only the number changes: an older claimfsm refuses the file instead of reading bytes.
_FROM_V3 = ("UPDATE st_meta SET value = '4' WHERE key = 'schema'",)
# Version 5 marks a delta that also applies to the snapshot below it as kind 2
# (state/sqlite/rows.py ``BASED``): a cold read of it skips the rows between. Readers take
# kinds 1 and 2 alike in a chain, so only the number changes: an older claimfsm refuses
# the file instead of failing on a row kind it does not know.
_FROM_V4 = ("UPDATE st_meta SET value = '5' WHERE key = 'schema'",)
# Version 6 may store an envelope's ``d`` value as a reference to the state's own
# (state/envref.py: ``extra`` bytes led by ``r``). Readers take the canonical form too,
# so only the number changes: an older claimfsm refuses the file instead of failing on
# an envelope it cannot resolve.
_FROM_V5 = ("UPDATE st_meta SET value = '6' WHERE key = 'schema'",)
# Version 7 lets a fork share its parent's rows (``st_sessions.shares``,
# state/sqlite/shares.py, a column ``create`` adds when missing); older forks are copies
# and read as they are, so the upgrade changes the number: an older claimfsm refuses the
# file instead of missing a fork's first revisions.
_FROM_V6 = ("UPDATE st_meta SET value = '7' WHERE key = 'schema'",)
_UPGRADES = {"1": (_FROM_V1, "2"), "2": (_FROM_V2, "3"), "3": (_FROM_V3, "4"),
             "4": (_FROM_V4, "5"), "5": (_FROM_V5, "6"), "6": (_FROM_V6, "7")}


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


def init_schema(conn: sqlite3.Connection, budget: float) -> None:
    """Create the ``st_`` tables if missing; refuse a file of another schema version."""

    def create(c: sqlite3.Connection) -> None:
        tables = {name for (name,) in c.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('st_sessions', 'st_catalog',"
            " 'st_timers')")}
        for statement in _SCHEMA:
            c.execute(statement)
        _add_fork_columns(c, "st_sessions" in tables)
        if c.execute("SELECT count(*) FROM pragma_table_info('st_sessions')"
                     " WHERE name = 'shares'").fetchone() == (0,):
            c.execute("ALTER TABLE st_sessions ADD COLUMN shares TEXT")  # schema 7's
        if tables == {"st_sessions"} and c.execute("SELECT 1 FROM st_sessions").fetchone():
            # Sessions from before the catalog: their verdicts are read once, by the
            # first listing that may write (state/sqlite/catalog.py).
            c.execute("INSERT OR REPLACE INTO st_meta VALUES ('catalog', 'fill')")
        if ("st_sessions" in tables and "st_timers" not in tables
                and c.execute("SELECT 1 FROM st_sessions").fetchone()):
            # Sessions from before timers: their pending retries are read once, by the
            # first tick (state/sqlite/timers.py).
            c.execute("INSERT OR REPLACE INTO st_meta VALUES ('timers', 'fill')")
        if "st_timers" in tables and c.execute(
                "SELECT count(*) FROM pragma_table_info('st_timers') WHERE name = 'since'"
        ).fetchone() == (0,):
            # A table from before the queue's order by ``since``: the column, and the
            # waiting sessions' holds read once by the first tick or queue page.
            c.execute("ALTER TABLE st_timers ADD COLUMN since TEXT")
            if c.execute("SELECT 1 FROM st_timers WHERE waiting = 1").fetchone():
                c.execute("INSERT OR REPLACE INTO st_meta VALUES ('timers', 'fill')")
        if c.execute(_KEY_ACTORS).fetchone() == (0,):
            # Keys from before their actors were recorded: the columns, empty.
            c.execute("ALTER TABLE st_keys ADD COLUMN created_by TEXT")
            c.execute("ALTER TABLE st_keys ADD COLUMN revoked_by TEXT")
        c.execute(_QUEUE_INDEX)
        c.execute("INSERT OR IGNORE INTO st_meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        found = c.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone()[0]
        while found in _UPGRADES:
            statements, found = _UPGRADES[found]
            for statement in statements:
                c.execute(statement)
        if found != SCHEMA_VERSION:
            raise StoreError(f"st_ schema version {found}, expected {SCHEMA_VERSION}")

    try:
        row = conn.execute(
            "SELECT value, (SELECT count(*) FROM sqlite_master WHERE name IN ('st_catalog',"
            " 'st_tombstones', 'st_timers', 'st_timers_queue', 'st_keys', 'st_catalog_parent')),"
            f" ({_KEY_ACTORS}) FROM st_meta WHERE key='schema'"
        ).fetchone()
    except sqlite3.OperationalError:
        row = None  # a new file: no st_ tables yet
    if row == (SCHEMA_VERSION, 6, 1):  # the tables, indexes and columns added since 3
        return
    transaction(conn, create, budget)


def _add_fork_columns(c: sqlite3.Connection, had_sessions: bool) -> None:
    # A catalog from before the forks index: the columns, and (if it holds sessions) the
    # forks read once from their heads by the first lookup (state/sqlite/forks.py).
    from claimfsm.state.sqlite.forks import COLUMNS, INDEX

    if c.execute("SELECT count(*) FROM pragma_table_info('st_catalog') WHERE name = 'parent'"
                 ).fetchone() == (0,):
        for column in COLUMNS:
            c.execute(f"ALTER TABLE st_catalog ADD COLUMN {column}")
        if had_sessions and c.execute("SELECT 1 FROM st_sessions").fetchone():
            c.execute("INSERT OR REPLACE INTO st_meta VALUES ('forks', 'fill')")
    elif had_sessions and c.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'st_catalog_parent'"
    ).fetchone() == (0,) and c.execute("SELECT 1 FROM st_sessions").fetchone():
        # A catalog made by this schema just now for sessions from before it.
        c.execute("INSERT OR REPLACE INTO st_meta VALUES ('forks', 'fill')")
    c.execute(INDEX)


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
