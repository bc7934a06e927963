"""API keys in a PostgreSQL store (``st_keys``; :mod:`claimfsm.state.keys`): the same rows
as SQLite's, one statement each (the connection is in autocommit)."""

from __future__ import annotations

from collections.abc import Sequence

from claimfsm.state.keys import ApiKey, KeyExists, UnknownKey
from claimfsm.state.postgres.core import PostgresCore
from claimfsm.state.sqlite.keys import COLUMNS

__all__ = ["PostgresKeys"]

_NAMES = ", ".join(COLUMNS)
_INSERT = (f"INSERT INTO st_keys ({_NAMES}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"
           " ON CONFLICT DO NOTHING RETURNING id")
_REVOKE = (f"UPDATE st_keys SET revoked_at = %s WHERE name = %s AND revoked_at IS NULL"
           f" RETURNING {_NAMES}")


class PostgresKeys(PostgresCore):
    """The API-key part of :class:`~claimfsm.state.postgres.store.PostgresStore`."""

    def add_key(self, key: ApiKey) -> ApiKey:
        """Store ``key`` (see :meth:`StateStore.add_key`)."""
        if not self._query(_INSERT, tuple(getattr(key, name) for name in COLUMNS)):
            raise KeyExists(f"name: an API key {key.name!r} exists or existed", field="name")
        return key

    def api_keys(self) -> Sequence[ApiKey]:
        """Every key, oldest first."""
        if self._query("SELECT to_regclass('st_keys') IS NULL") == [(True,)]:
            return []  # a database from before keys, opened read-only
        rows = self._query(f"SELECT {_NAMES} FROM st_keys ORDER BY id")
        return [ApiKey(**dict(zip(COLUMNS, row, strict=True))) for row in rows]

    def revoke_key(self, name: str, *, at: str) -> ApiKey:
        """Mark the live key ``name`` revoked (see :meth:`StateStore.revoke_key`)."""
        rows = self._query(_REVOKE, (at, name))
        if not rows:
            raise UnknownKey(f"name: no live API key {name!r}", field="name")
        return ApiKey(**dict(zip(COLUMNS, rows[0], strict=True)))
