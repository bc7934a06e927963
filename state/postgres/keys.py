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
_REVOKE = (f"UPDATE st_keys SET revoked_at = %s, revoked_by = %s WHERE name = %s"
           f" AND revoked_at IS NULL RETURNING {_NAMES}")


class PostgresKeys(PostgresCore):
    """The API-key part of :class:`~claimfsm.state.postgres.store.PostgresStore`."""

    def add_key(self, key: ApiKey) -> ApiKey:
        """Store ``key`` (see :meth:`StateStore.add_key`)."""
        if not self._query(_INSERT, tuple(getattr(key, name) for name in COLUMNS)):
            raise KeyExists(f"name: an API key {key.name!r} exists or existed", field="name")
        return key

    def api_keys(self) -> Sequence[ApiKey]:
        """Every key, oldest first."""
        # The columns the schema has: one from before keys (or before their actors),
        # opened read-only, is read as it is.
        have = {str(row[0]) for row in self._query(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = 'st_keys'")}
        if not have:
            return []
        names = [name for name in COLUMNS if name in have]
        rows = self._query(f"SELECT {', '.join(names)} FROM st_keys ORDER BY id")
        return [ApiKey(**dict(zip(names, row, strict=True))) for row in rows]

    def revoke_key(self, name: str, *, at: str, actor: str | None = None) -> ApiKey:
        """Mark the live key ``name`` revoked (see :meth:`StateStore.revoke_key`)."""
        rows = self._query(_REVOKE, (at, actor, name))
        if not rows:
            raise UnknownKey(f"name: no live API key {name!r}", field="name")
        return ApiKey(**dict(zip(COLUMNS, rows[0], strict=True)))
