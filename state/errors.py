"""Errors the store raises: contract errors only, under claimfsm's one root.

Each has a stable code (:class:`~claimfsm._base.errors.ErrorCode`) and says where:
``sid`` and ``rev`` when it is about a session or a revision, ``field`` (``db``) when it
is about the ``--db`` value. Backends turn their driver's errors (``sqlite3.Error``,
``psycopg.Error``) into these, so no caller sees a driver's exception.
"""

from __future__ import annotations

from claimfsm._base.errors import ClaimFsmError, ErrorCode

__all__ = ["NoStore", "RevConflict", "StoreError", "UnknownRevision", "UnknownSession"]


class StoreError(ClaimFsmError):
    """Root of the store's errors."""

    code = ErrorCode.STORE_ERROR


class RevConflict(StoreError):
    """A compare-and-set commit saw a different head than it expected: ``expected`` is
    the head the writer expected, ``head`` the one found (each when known)."""

    code = ErrorCode.REV_CONFLICT
    _where = (*StoreError._where, "expected", "head")

    def __init__(self, msg: str, *, sid: str | None = None, rev: int | None = None,
                 expected: int | None = None, head: int | None = None) -> None:
        super().__init__(msg, sid=sid, rev=rev)
        self.expected = expected
        self.head = head


class UnknownSession(StoreError):
    """No session with that id."""

    code = ErrorCode.UNKNOWN_SESSION


class UnknownRevision(StoreError):
    """The session has no such revision."""

    code = ErrorCode.UNKNOWN_REVISION


class NoStore(StoreError):
    """``--db`` names a store that does not exist, and the command only reads."""

    code = ErrorCode.UNKNOWN_DB
