"""Answers of tool calls that finished in a step not committed yet.

A step that runs its calls at the same time (``claimfsm.skills.tools.gather``) commits
them together, in plan order, in the step's one revision. Each call's answer is saved
here the moment it arrives, under the session and the step's scope (the head revision
it runs from), so a process killed before that commit leaves them behind and the step,
run again from the same head, takes them instead of calling again (the plan-step
contract: a call that finished is not made twice). Once the step is committed its
revision holds the answers and these rows are only waste: loading a scope drops the
session's rows of every other scope, and rows older than :data:`KEEP_S` of any session
(one that ended after its last gathered step).

Same place as the sessions: a table ``st_answers`` in the SQLite file or the PostgreSQL
database of the store, written on a connection of its own (answers arrive on the calls'
threads), opened on first use so that commands that never gather never open it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any, Protocol

__all__ = ["KEEP_S", "Answers", "MemoryAnswers", "PgAnswers", "SQLiteAnswers", "open_answers"]

KEEP_S = 86_400.0
"""Seconds a saved answer is kept at most (a day: a killed process is resumed sooner)."""


class Answers(Protocol):
    """Where a gather saves answers (the executor's ``answers`` resource)."""

    def load(self, sid: str, scope: str) -> dict[str, bytes]:
        """The answers saved for ``sid`` in ``scope``, by call key (dropping stale rows)."""
        ...

    def save(self, sid: str, scope: str, key: str, body: bytes) -> None:
        """Keep one answer; durable when this returns."""
        ...

    def close(self) -> None:
        """Close the connection, if one was opened."""
        ...


class MemoryAnswers:
    """For the in-memory store: as durable as the sessions it serves."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], dict[str, bytes]] = {}
        self._lock = threading.Lock()

    def load(self, sid: str, scope: str) -> dict[str, bytes]:
        with self._lock:
            for other in [k for k in self._rows if k[0] == sid and k[1] != scope]:
                del self._rows[other]
            return dict(self._rows.get((sid, scope), {}))

    def save(self, sid: str, scope: str, key: str, body: bytes) -> None:
        with self._lock:
            self._rows.setdefault((sid, scope), {})[key] = body

    def close(self) -> None:
        return None


_CREATE = ("CREATE TABLE IF NOT EXISTS st_answers (sid {t} NOT NULL, scope {t} NOT NULL, "
           "key {t} NOT NULL, body {b} NOT NULL, at {f} NOT NULL, PRIMARY KEY (sid, scope, key))")


class _TableAnswers:
    """``st_answers`` over one connection of a DB-API driver: ``_c`` opens it, ``_mark``
    is its parameter mark and ``_UPSERT`` its insert-or-replace."""

    _mark = "?"
    _UPSERT = ""

    def __init__(self) -> None:
        self._conn: Any = None
        self._lock = threading.Lock()

    def _c(self) -> Any:
        raise NotImplementedError

    def load(self, sid: str, scope: str) -> dict[str, bytes]:
        m = self._mark
        with self._lock:
            c = self._c()
            c.execute(f"DELETE FROM st_answers WHERE (sid = {m} AND scope <> {m}) OR at < {m}",
                      (sid, scope, time.time() - KEEP_S))
            rows = c.execute(f"SELECT key, body FROM st_answers WHERE sid = {m} AND scope = {m}",
                             (sid, scope)).fetchall()
        return {str(k): bytes(b) for k, b in rows}

    def save(self, sid: str, scope: str, key: str, body: bytes) -> None:
        with self._lock:
            self._c().execute(self._UPSERT, (sid, scope, key, body, time.time()))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class SQLiteAnswers(_TableAnswers):
    """``st_answers`` in the store's SQLite file."""

    _UPSERT = "INSERT OR REPLACE INTO st_answers VALUES (?, ?, ?, ?, ?)"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            from claimfsm._base.sqlite_read import connect_writer

            conn = connect_writer(self.path, check_same_thread=False, isolation_level=None,
                                  timeout=30.0)
            # The store's own default: in WAL mode a commit survives the process being
            # killed (what these rows are for), and costs no fsync.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_CREATE.format(t="TEXT", b="BLOB", f="REAL"))
            self._conn = conn
        connection: sqlite3.Connection = self._conn
        return connection


class PgAnswers(_TableAnswers):
    """``st_answers`` in the store's PostgreSQL database."""

    _mark = "%s"
    _UPSERT = ("INSERT INTO st_answers VALUES (%s, %s, %s, %s, %s) ON CONFLICT (sid, scope, key)"
               " DO UPDATE SET body = EXCLUDED.body, at = EXCLUDED.at")

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def _c(self) -> Any:
        if self._conn is None:
            from claimfsm.state.postgres.db import connect

            conn = connect(self.url, 10.0)
            conn.execute(_CREATE.format(t="text", b="bytea", f="double precision"))
            self._conn = conn
        return self._conn


def open_answers(store: str | None, *, url: bool = False) -> Answers:
    """The answers beside a store: ``store`` is its SQLite file or PostgreSQL URL
    (``url=True``), ``None`` for the in-memory store."""
    if store is None or store == ":memory:":
        return MemoryAnswers()
    return PgAnswers(store) if url else SQLiteAnswers(store)
