"""What SQLite's own errors mean to claimfsm: a ``STORE_*`` code and a message naming
the file.

claimfsm keeps two kinds of SQLite file, the session store (``claimfsm.state.sqlite``)
and the evidence index (``claimfsm.skills.tools.index``); each turns ``sqlite3.Error``
into a :class:`~claimfsm._base.errors.ClaimFsmError` with the code chosen here, so no
caller (the CLI, the HTTP API) ever sees the driver's exception.
"""

from __future__ import annotations

import os
import sqlite3

from claimfsm._base.errors import ClaimFsmError, ErrorCode

__all__ = ["SQLiteFileError", "sqlite_failure"]


def sqlite_failure(exc: sqlite3.Error, path: str | os.PathLike[str]) -> tuple[ErrorCode, str]:
    """The code and message for what SQLite said about the file at ``path``:
    ``STORE_NOT_DATABASE`` for a damaged file or one that is not SQLite, else ``STORE_IO``
    (read-only, a full disk, a missing folder...)."""
    text = str(exc)
    low = text.lower()
    where = os.fspath(path)
    if "not a database" in low or "malformed" in low:
        return (ErrorCode.STORE_NOT_DATABASE,
                f"--db: {where}: damaged or not a SQLite database ({text})")
    if "readonly" in low or "read-only" in low:
        return ErrorCode.STORE_IO, f"--db: {where} is read-only ({text})"
    return ErrorCode.STORE_IO, f"--db: {where}: {text}"


class SQLiteFileError(ClaimFsmError):
    """A SQLite file that cannot be used, as :func:`sqlite_failure` classifies it."""

    code = ErrorCode.STORE_IO

    @classmethod
    def from_sqlite(cls, exc: sqlite3.Error, path: str | os.PathLike[str]) -> SQLiteFileError:
        """The error for what SQLite said about ``path`` (``field`` is ``db``)."""
        code, msg = sqlite_failure(exc, path)
        return cls(msg, code=code, field="db")
