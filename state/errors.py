"""Errors the store raises: contract errors only, each with a stable code and context."""

from __future__ import annotations

from typing import Any

__all__ = ["NoStore", "RevConflict", "StoreError", "UnknownRevision", "UnknownSession"]


class StoreError(Exception):
    """Root of the store's errors. ``code`` is stable; ``context`` says where."""

    code = "STORE_ERROR"

    def __init__(self, msg: str, **context: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.context = context


class RevConflict(StoreError):
    """A compare-and-set commit saw a different head than it expected."""

    code = "REV_CONFLICT"


class UnknownSession(StoreError):
    """No session with that id."""

    code = "UNKNOWN_SESSION"


class UnknownRevision(StoreError):
    """The session has no such revision."""

    code = "UNKNOWN_REVISION"


class NoStore(StoreError):
    """``--db`` names a store that does not exist, and the command only reads."""

    code = "UNKNOWN_DB"
