"""API keys in a SQLite store (``st_keys``; :mod:`claimfsm.state.keys`): one row per key,
its digest and never the key; a revoked key's row stays, so its name stays taken."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from claimfsm.state.keys import ApiKey, KeyExists, UnknownKey
from claimfsm.state.sqlite.core import SQLiteCore

__all__ = ["COLUMNS", "SQLiteKeys"]

#: The columns of ``st_keys`` in :class:`ApiKey`'s field order.
COLUMNS = ("name", "role", "key_id", "salt", "digest", "created_at", "expires_at",
           "revoked_at", "created_by", "revoked_by")


def _keys(c: sqlite3.Connection) -> list[ApiKey]:
    # The columns the file has: one from before keys (or before their actors), opened
    # read-only, is read as it is.
    have = {row[0] for row in c.execute("SELECT name FROM pragma_table_info('st_keys')")}
    if not have:
        return []
    names = [name for name in COLUMNS if name in have]
    rows = c.execute(f"SELECT {', '.join(names)} FROM st_keys ORDER BY id")
    return [ApiKey(**dict(zip(names, row, strict=True))) for row in rows]


class SQLiteKeys(SQLiteCore):
    """The API-key part of :class:`~claimfsm.state.sqlite.store.SQLiteStore`."""

    def add_key(self, key: ApiKey) -> ApiKey:
        """Store ``key`` (see :meth:`StateStore.add_key`)."""
        values = tuple(getattr(key, name) for name in COLUMNS)

        def insert(c: sqlite3.Connection) -> int:
            # IGNORE: a taken name (or, one in 2**48, key id) inserts nothing.
            return c.execute(f"INSERT OR IGNORE INTO st_keys ({', '.join(COLUMNS)}) VALUES"
                             f" ({', '.join('?' * len(COLUMNS))})", values).rowcount

        if self._write_one(insert) != 1:
            raise KeyExists(f"name: an API key {key.name!r} exists or existed", field="name")
        return key

    def api_keys(self) -> Sequence[ApiKey]:
        """Every key, oldest first."""
        return self._read(_keys)

    def revoke_key(self, name: str, *, at: str, actor: str | None = None) -> ApiKey:
        """Mark the live key ``name`` revoked (see :meth:`StateStore.revoke_key`)."""

        def revoke(c: sqlite3.Connection) -> int:
            return c.execute("UPDATE st_keys SET revoked_at = ?, revoked_by = ? WHERE name = ?"
                             " AND revoked_at IS NULL", (at, actor, name)).rowcount

        if self._write_one(revoke) != 1:
            raise UnknownKey(f"name: no live API key {name!r}", field="name")
        return next(k for k in self.api_keys() if k.name == name)
