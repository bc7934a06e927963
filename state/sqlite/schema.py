"""The ``st_`` schema of a SQLite store: its tables, what a writable open adds to a file
made by an older version, and the upgrade chain by schema number
(:data:`~claimfsm.state.sqlite.db.SCHEMA_VERSION`). Its own module because it runs when
the writer opens, never on a commit, and grows with every schema version, while the
connection and transaction plumbing in :mod:`claimfsm.state.sqlite.db` is on every
commit's path.
"""

from __future__ import annotations

import sqlite3

from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite.db import SCHEMA_VERSION, transaction

__all__ = ["init_schema"]

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
