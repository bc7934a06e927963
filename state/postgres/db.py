"""PostgreSQL plumbing for :class:`claimfsm.state.postgres.store.PostgresStore`: the connection,
the ``st_`` schema, the statements, and server errors mapped to store errors.

Every write is one statement in autocommit mode (a data-modifying CTE: compare-and-set
on the head, the blobs, the revision row), so a commit costs one round trip and one
server transaction; ``PRIMARY KEY (session, rev)`` is the backstop under the CAS.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from claimfsm._base.errors import ErrorCode
from claimfsm.state.errors import RevConflict, StoreError
from claimfsm.state.holds import Timer
from claimfsm.state.model import SessionState, verdict_label

__all__ = [
    "COMMIT",
    "COMMIT_BLOBS",
    "COMMIT_BLOBS_LABEL",
    "COMMIT_LABEL",
    "CREATE",
    "CREATE_BLOBS",
    "HEADS",
    "PAGE",
    "ROWS",
    "SCHEMA_VERSION",
    "StoreUnavailable",
    "commit_sql",
    "connect",
    "init_schema",
    "insert_session",
    "listed",
    "redact",
    "retrying",
    "store_error",
]

#: Version 2 writes snapshots as arrays of field values and reads version 1's named ones
#: too: an upgrade only changes the number (so an older claimfsm refuses the database).
SCHEMA_VERSION = "2"
T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS st_meta (key text PRIMARY KEY, value text NOT NULL)",
    # id gives creation order.
    "CREATE TABLE IF NOT EXISTS st_sessions ("
    " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, sid text NOT NULL UNIQUE,"
    " head integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS st_revisions ("
    " session bigint NOT NULL, rev integer NOT NULL, parent_rev integer,"
    " kind smallint NOT NULL, fsm text NOT NULL, skill text, ts text NOT NULL,"
    " body bytea NOT NULL, extra bytea NOT NULL, hash bytea NOT NULL,"
    " PRIMARY KEY (session, rev))",
    "CREATE TABLE IF NOT EXISTS st_blobs (h bytea PRIMARY KEY, z smallint NOT NULL,"
    " data bytea NOT NULL)",
    # The listing's catalog (state/postgres/catalog.py): claim and verdict label.
    "CREATE TABLE IF NOT EXISTS st_catalog (id bigint PRIMARY KEY, claim text NOT NULL,"
    " verdict text)",
    # One row per deleted session (state/postgres/erase.py), id = its st_sessions.id.
    "CREATE TABLE IF NOT EXISTS st_tombstones (id bigint PRIMARY KEY, sid text NOT NULL,"
    " deleted_at text NOT NULL, actor text NOT NULL, head integer NOT NULL,"
    " fsm text NOT NULL, hash bytea NOT NULL)",
    # Sessions that wait for a person or are due (state/holds.py), moved by the commit
    # that changes them; ``claimfsm tick`` seeks the index on due time.
    "CREATE TABLE IF NOT EXISTS st_timers (id bigint PRIMARY KEY, due text,"
    " waiting smallint NOT NULL)",
    "CREATE INDEX IF NOT EXISTS st_timers_due ON st_timers (due, id) WHERE due IS NOT NULL",
    # When a holding session's hold began: the review queue's order (state/queue.py).
    "ALTER TABLE st_timers ADD COLUMN IF NOT EXISTS since text",
    "CREATE INDEX IF NOT EXISTS st_timers_queue ON st_timers (since, id) WHERE waiting = 1",
    # API keys (state/keys.py): a digest per key, never the key; revoked rows stay.
    "CREATE TABLE IF NOT EXISTS st_keys ("
    " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE,"
    " role text NOT NULL, key_id text NOT NULL UNIQUE, salt text NOT NULL,"
    " digest text NOT NULL, created_at text NOT NULL, expires_at text, revoked_at text)",
    # Who added and who revoked each key (a store from before has the columns added).
    "ALTER TABLE st_keys ADD COLUMN IF NOT EXISTS created_by text",
    "ALTER TABLE st_keys ADD COLUMN IF NOT EXISTS revoked_by text",
    # A fork's parent, written by the fork's own commit (state/postgres/catalog.py, forks).
    "ALTER TABLE st_catalog ADD COLUMN IF NOT EXISTS parent text",
    "ALTER TABLE st_catalog ADD COLUMN IF NOT EXISTS parent_rev integer",
    "ALTER TABLE st_catalog ADD COLUMN IF NOT EXISTS forked text",
    "CREATE INDEX IF NOT EXISTS st_catalog_parent ON st_catalog (parent, id)"
    " WHERE parent IS NOT NULL",
)
# Any fixed number: it serialises concurrent schema creation by several workers.
_SCHEMA_LOCK = 0x636C61696D66736D

_COLUMNS = "session, rev, parent_rev, kind, fsm, skill, ts, body, extra, hash"
_ROW_VALUES = "%s, %s, %s, %s, %s, %s, %s, %s, %s"
_BLOBS = (
    "b AS (INSERT INTO st_blobs (h, z, data) SELECT u.h, u.z, u.d"
    " FROM unnest(%s::bytea[], %s::smallint[], %s::bytea[]) AS u(h, z, d)"
    " WHERE EXISTS (SELECT 1 FROM s) ORDER BY u.h ON CONFLICT (h) DO NOTHING), "
)
_CAS = "s AS (UPDATE st_sessions SET head = %s WHERE id = %s AND head = %s RETURNING id), "
_NEW = (
    "s AS (INSERT INTO st_sessions (sid, head) VALUES (%s, 0)"
    " ON CONFLICT (sid) DO NOTHING RETURNING id), "
)
_INSERT = (
    f"INSERT INTO st_revisions ({_COLUMNS}) SELECT s.id, {_ROW_VALUES} FROM s RETURNING session"
)

# The catalog moves with the session in the same statement: its row at creation, its
# verdict label by the commit that changes it.
_LIST = "c AS (INSERT INTO st_catalog (id, claim, verdict) SELECT id, %s, %s FROM s), "
_LABEL = "v AS (UPDATE st_catalog SET verdict = %s WHERE id = (SELECT id FROM s)), "
# A session's timer by the commit that changes it: set (due, waiting) or cleared.
_TIMER_SET = ("t AS (INSERT INTO st_timers (id, due, waiting, since) SELECT id, %s, %s, %s"
              " FROM s ON CONFLICT (id) DO UPDATE SET due = excluded.due,"
              " waiting = excluded.waiting, since = excluded.since), ")
_TIMER_CLEAR = "t AS (DELETE FROM st_timers WHERE id = (SELECT id FROM s)), "
# A fork's parent by the commit of the fork's own revision (state/lineage.py).
_PARENT = ("p AS (UPDATE st_catalog SET parent = %s, parent_rev = %s, forked = %s"
           " WHERE id = (SELECT id FROM s)), ")


def commit_sql(blobs: bool, label: bool, timer: Timer | None, retime: bool,
               mark: tuple[str, int, str] | None = None) -> tuple[str, tuple[Any, ...]]:
    """The commit statement with the parts this commit needs, and the parameters of the
    timer and the fork's parent (they follow the label's): head, session, expected,
    [hashes, zs, datas], [label], [due, waiting, since], [parent, rev, at], row values."""
    parts = [_CAS, _BLOBS if blobs else "", _LABEL if label else ""]
    extra: tuple[Any, ...] = ()
    if retime:
        parts.append(_TIMER_SET if timer is not None else _TIMER_CLEAR)
        extra = (timer[0], int(timer[1]), timer[2]) if timer is not None else ()
    if mark is not None:
        parts.append(_PARENT)
        extra = (*extra, *mark)
    return "WITH " + "".join(parts).removesuffix(", ") + " " + _INSERT, extra



#: head, session, expected, row values -> one row (``session``) if the CAS won.
COMMIT = "WITH " + _CAS.removesuffix(", ") + " " + _INSERT
#: head, session, expected, hashes, zs, datas, row values.
COMMIT_BLOBS = "WITH " + _CAS + _BLOBS.removesuffix(", ") + " " + _INSERT
#: head, session, expected, verdict label, row values (a commit that changes the verdict).
COMMIT_LABEL = "WITH " + _CAS + _LABEL.removesuffix(", ") + " " + _INSERT
#: head, session, expected, hashes, zs, datas, verdict label, row values.
COMMIT_BLOBS_LABEL = "WITH " + _CAS + _BLOBS + _LABEL.removesuffix(", ") + " " + _INSERT
#: sid, claim, verdict label, row values -> the new session number, or no row if ``sid``
#: exists.
CREATE = "WITH " + _NEW + _LIST.removesuffix(", ") + " " + _INSERT
#: sid, hashes, zs, datas, claim, verdict label, row values.
CREATE_BLOBS = "WITH " + _NEW + _BLOBS + _LIST.removesuffix(", ") + " " + _INSERT
#: session, last, session, first -> rows up to ``last`` from the nearest snapshot at or
#: below ``first`` (a page of history), in chain order; the snapshot is found by seeking
#: the primary key backwards from ``first``.
PAGE = (
    "SELECT rev, parent_rev, kind, fsm, skill, ts, body, extra, hash FROM st_revisions"
    " WHERE session = %s AND rev <= %s AND rev >= (SELECT max(rev) FROM st_revisions"
    " WHERE session = %s AND rev <= %s AND kind = 0) ORDER BY rev"
)
#: sids -> (sid, session, row values) of each session's rows from its last snapshot to
#: its head, in chain order (several heads read at once: ``claimfsm tick``).
HEADS = (
    "SELECT s.sid, s.id, r.rev, r.parent_rev, r.kind, r.fsm, r.skill, r.ts, r.body, r.extra,"
    " r.hash FROM st_sessions s JOIN st_revisions r ON r.session = s.id"
    " WHERE s.sid = ANY(%s) AND r.rev <= s.head AND r.rev >= (SELECT max(x.rev)"
    " FROM st_revisions x WHERE x.session = s.id AND x.rev <= s.head AND x.kind = 0)"
    " ORDER BY s.id, r.rev"
)
#: session, first, last -> rows ``first..last`` in chain order.
ROWS = (
    "SELECT rev, parent_rev, kind, fsm, skill, ts, body, extra, hash FROM st_revisions"
    " WHERE session = %s AND rev BETWEEN %s AND %s ORDER BY rev"
)


class StoreUnavailable(StoreError):
    """The PostgreSQL server could not be reached or refused the connection."""

    code = ErrorCode.STORE_UNAVAILABLE


_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and logs)."""
    return _PASSWORD.sub(r"\1***@", url)


def connect(url: str, timeout: float) -> psycopg.Connection[Any]:
    """An autocommit connection, or :class:`StoreUnavailable` naming the (redacted) URL."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreUnavailable(f"cannot connect to {redact(url)}: {first}", field="db") from exc


def retrying(fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn``; a deadlock or serialization failure (two writers' blob inserts meeting
    in opposite order) is retried, then ``STORE_BUSY``; a lost connection becomes
    :class:`StoreUnavailable`, a duplicate ``(session, rev)`` (the primary-key backstop)
    :class:`RevConflict`, a full disk (SQLSTATE 53100) ``STORE_FULL``, a read-only server
    ``STORE_READ_ONLY``, any other server error a :class:`StoreError`: no psycopg
    exception leaves the store.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except psycopg.Error as exc:
            error = store_error(exc, attempt, attempts)
            if error is not None:
                raise error from exc
    raise AssertionError("unreachable")


def store_error(exc: psycopg.Error, attempt: int, attempts: int) -> StoreError | None:
    """The store error :func:`retrying` raises for ``exc`` on try ``attempt`` (from 0) of
    ``attempts``; ``None``: try again (the async store maps errors the same way)."""
    if isinstance(exc, (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)):
        if attempt < attempts - 1:
            return None
        return StoreError(f"PostgreSQL: {str(exc).strip()} ({attempts} attempts)",
                          code=ErrorCode.STORE_BUSY)
    if isinstance(exc, pg_errors.UniqueViolation):
        return RevConflict(f"revision already exists: {exc.diag.message_detail}")
    if isinstance(exc, pg_errors.DiskFull):  # SQLSTATE 53100: the transaction rolled back
        return StoreError(f"PostgreSQL: the server's disk is full ({str(exc).strip()}); "
                          "nothing was written past the last commit", field="db",
                          code=ErrorCode.STORE_FULL)
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):  # 25006: a standby, or read-only
        return StoreError(f"PostgreSQL: the server is read-only ({str(exc).strip()})",
                          field="db", code=ErrorCode.STORE_READ_ONLY)
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"PostgreSQL: {str(exc).strip()}")
    return StoreError(f"PostgreSQL: {str(exc).strip()}")


def init_schema(conn: psycopg.Connection[Any], *, create: bool = True) -> bool:
    """Create the ``st_`` tables if missing (unless ``create`` is false: then report
    ``False``); refuse a schema of another version.
    """
    try:
        with conn.transaction():
            found = conn.execute(
                "SELECT value, to_regclass('st_catalog') IS NOT NULL"
                " AND to_regclass('st_tombstones') IS NOT NULL"
                " AND to_regclass('st_timers_queue') IS NOT NULL"
                " AND to_regclass('st_keys') IS NOT NULL"
                " AND to_regclass('st_catalog_parent') IS NOT NULL"
                " AND EXISTS (SELECT 1 FROM pg_attribute WHERE attname = 'revoked_by'"
                " AND attrelid = to_regclass('st_keys')) FROM st_meta"
                " WHERE key = 'schema'").fetchone()
    except pg_errors.UndefinedTable:
        found = None  # a new database: no st_ tables yet
    if found == (SCHEMA_VERSION, True):
        return True
    if found is not None and not create:
        return True  # read-only on a database from before the catalog: listed from heads
    if not create and found is None:
        return False
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        had_timers = conn.execute("SELECT to_regclass('st_timers') IS NOT NULL").fetchone()
        had_since = conn.execute("SELECT to_regclass('st_timers_queue') IS NOT NULL"
                                 ).fetchone()
        had_sessions = conn.execute("SELECT to_regclass('st_sessions') IS NOT NULL").fetchone()
        had_parent = conn.execute("SELECT to_regclass('st_catalog_parent') IS NOT NULL"
                                  ).fetchone()
        for statement in _SCHEMA:
            conn.execute(statement)
        if had_sessions == (True,) and had_timers == (False,):
            # Sessions from before timers: the first tick reads their pending retries
            # once (state/postgres/store.py, due).
            conn.execute("INSERT INTO st_meta VALUES ('timers', 'fill')"
                         " ON CONFLICT (key) DO UPDATE SET value = 'fill'")
        if had_timers == (True,) and had_since == (False,) and conn.execute(
                "SELECT 1 FROM st_timers WHERE waiting = 1 LIMIT 1").fetchone():
            # Waiting sessions from before the queue's ``since``: their holds are read
            # once, by the first tick or queue page (state/postgres/catalog.py).
            conn.execute("INSERT INTO st_meta VALUES ('timers', 'fill')"
                         " ON CONFLICT (key) DO UPDATE SET value = 'fill'")
        if had_parent == (False,) and had_sessions == (True,) and conn.execute(
                "SELECT 1 FROM st_sessions LIMIT 1").fetchone():
            # Forks from before the index: read once from the heads by the first lookup.
            conn.execute("INSERT INTO st_meta VALUES ('forks', 'fill')"
                         " ON CONFLICT (key) DO UPDATE SET value = 'fill'")
        conn.execute("INSERT INTO st_meta VALUES ('schema', %s) ON CONFLICT DO NOTHING",
                     (SCHEMA_VERSION,))
        conn.execute("UPDATE st_meta SET value = %s WHERE key = 'schema' AND value = '1'",
                     (SCHEMA_VERSION,))
        row = conn.execute("SELECT value FROM st_meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        raise StoreError(f"st_ schema version {row and row[0]}, expected {SCHEMA_VERSION}")
    return True


def listed(state: SessionState) -> tuple[str, str | None]:
    """A session's catalog values (claim, verdict label). PostgreSQL text cannot hold NUL,
    so a claim's NUL characters are listed as U+FFFD (the revisions keep them)."""
    return state.claim.replace("\x00", "\ufffd"), verdict_label(state.verdict)


def insert_session(
    conn: psycopg.Connection[Any], sid: str, head: int, rows: list[tuple[Any, ...]],
    listed: tuple[str, str | None], timer: Timer | None = None,
    then: Callable[[int], None] | None = None,
) -> int | None:
    """Insert session ``sid`` with its head, ``rows`` (``rev`` then the row values) and its
    catalog row (``listed``: claim, verdict label) in one transaction, with ``then`` (of
    the new session's number: a fork's own commit) last in it; its number, or ``None``
    if ``sid`` exists (a fork's target)."""
    with conn.transaction():
        found = conn.execute(
            "INSERT INTO st_sessions (sid, head) VALUES (%s, %s)"
            " ON CONFLICT (sid) DO NOTHING RETURNING id", (sid, head)).fetchone()
        if found is None:
            return None
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO st_revisions ({_COLUMNS}) VALUES (%s, {_ROW_VALUES})",
                            [(found[0], *row) for row in rows])
        conn.execute("INSERT INTO st_catalog (id, claim, verdict) VALUES (%s, %s, %s)",
                     (found[0], *listed))
        if timer is not None:
            conn.execute("INSERT INTO st_timers (id, due, waiting, since)"
                         " VALUES (%s, %s, %s, %s)", (found[0], timer[0], int(timer[1]), timer[2]))
        if then is not None:
            then(int(found[0]))
        return int(found[0])
