"""What SQLite's own errors mean to claimfsm: a ``STORE_*`` code and a message naming
the file.

claimfsm keeps two kinds of SQLite file, the session store (``claimfsm.state.sqlite``)
and the evidence index (``claimfsm.skills.tools.index``); each turns ``sqlite3.Error``
into a :class:`~claimfsm._base.errors.ClaimFsmError` with the code chosen here, so no
caller (the CLI, the HTTP API) ever sees the driver's exception.

A full disk is never damage: SQLite reports ENOSPC as ``SQLITE_FULL`` and claimfsm as
``STORE_FULL``. Some writes reach the disk where SQLite only says "disk I/O error" (a
quota reached, ``EDQUOT``, on a database write; the shared-memory file of the WAL growing
on a full disk); for those the file system itself is asked (``statvfs``) whether it is
full or mounted read-only. ``statvfs`` cannot see a user's quota, so a write error with
room left on the disk is followed by a probe: an unnamed temporary file (``O_TMPFILE``,
never visible, gone on close) is given a few blocks in the same folder; ``EDQUOT`` there
means the quota is what stopped SQLite's write.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from typing import Literal

from claimfsm._base.errors import ClaimFsmError, ErrorCode

__all__ = [
    "SQLiteFileError",
    "disk_error",
    "disk_state",
    "os_failure",
    "quota_reached",
    "sqlite_failure",
]

# SQLite's primary result codes (the low byte of ``sqlite_errorcode``).
_READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 8, 10, 11, 13, 14, 26
# Below this much free space a failed write is taken for a full disk: a commit, a WAL
# frame or the shared-memory file's next 32 KiB did not fit.
_LOW_SPACE = 1 << 20
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# SQLite's extended codes of a failed write (IOERR_WRITE, _FSYNC, _DIR_FSYNC, _TRUNCATE,
# _SHMSIZE): the only I/O errors a quota can cause, and never a reader's.
_WRITE_IOERRS = frozenset({778, 1034, 1290, 1546, 4874})
# What the quota probe asks for: more than a page or a WAL frame, so a quota with less than
# this left counts as reached, as a disk with less than _LOW_SPACE free counts as full.
_PROBE = 64 * 1024


def disk_state(path: str | os.PathLike[str]) -> Literal["full", "read-only"] | None:
    """Whether the file system holding ``path`` is full or mounted read-only (``None``:
    neither, or it cannot be asked)."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path))) or "."
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return "read-only"
    # root may fill the blocks reserved for it; anybody else stops at the available ones.
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    if blocks * st.f_frsize < _LOW_SPACE or (st.f_files and st.f_favail == 0):
        return "full"
    return None


def quota_reached(path: str | os.PathLike[str]) -> bool:
    """Whether the user's disk quota refuses new blocks (or files) in the folder of
    ``path`` (``EDQUOT``). Asks by writing :data:`_PROBE` bytes to an unnamed temporary
    file there, which no other process ever sees and which is gone when closed; ``False``
    when the quota takes them, or where such files do not exist (not Linux, a file system
    without ``O_TMPFILE``)."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return False
    folder = os.path.dirname(os.path.abspath(os.fspath(path))) or "."
    try:
        fd = os.open(folder, flag | os.O_WRONLY, 0o600)
    except OSError as exc:
        return exc.errno == errno.EDQUOT  # an inode quota
    try:
        # ext4 and XFS charge the quota when a write reserves its blocks, not at fsync.
        os.write(fd, bytes(_PROBE))
    except OSError as exc:
        return exc.errno == errno.EDQUOT
    finally:
        os.close(fd)
    return False


def _quota(where: str, text: str) -> tuple[ErrorCode, str]:
    return (ErrorCode.STORE_FULL, f"--db: {where}: the disk quota is reached ({text}); "
            "nothing was written past the last commit: free space or raise the quota and "
            "run the command again")


def _full(where: str, text: str) -> tuple[ErrorCode, str]:
    return (ErrorCode.STORE_FULL, f"--db: {where}: the disk is full ({text}); nothing was "
            "written past the last commit: free space and run the command again")


def _read_only(where: str, text: str) -> tuple[ErrorCode, str]:
    return ErrorCode.STORE_READ_ONLY, f"--db: {where} is read-only ({text})"


def sqlite_failure(exc: sqlite3.Error, path: str | os.PathLike[str]) -> tuple[ErrorCode, str]:
    """The code and message for what SQLite said about the file at ``path``:
    ``STORE_FULL`` for a full disk or quota, ``STORE_READ_ONLY`` for a read-only file,
    folder or file system, ``STORE_NOT_DATABASE`` for a damaged file or one that is not
    SQLite, else ``STORE_IO`` (a missing folder, a table gone...)."""
    text = str(exc)
    low = text.lower()
    where = os.fspath(path)
    primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if primary == _FULL or "database or disk is full" in low:
        return _full(where, text)
    if primary == _READONLY or "readonly" in low or "read-only" in low:
        return _read_only(where, text)
    if primary in (_IOERR, _CANTOPEN):
        state = disk_state(where)
        if state == "full":
            return _full(where, text)
        if state == "read-only":
            return _read_only(where, text)
        if (getattr(exc, "sqlite_errorcode", None) in _WRITE_IOERRS
                and quota_reached(where)):
            return _quota(where, text)
    if primary in (_NOTADB, _CORRUPT) or "not a database" in low or "malformed" in low:
        return (ErrorCode.STORE_NOT_DATABASE,
                f"--db: {where}: damaged or not a SQLite database ({text})")
    return ErrorCode.STORE_IO, f"--db: {where}: {text}"


def os_failure(exc: OSError, path: str | os.PathLike[str]) -> tuple[ErrorCode, str]:
    """The code and message for an ``OSError`` met writing beside the file at ``path``
    (``ENOSPC``/``EDQUOT``: ``STORE_FULL``; ``EROFS``: ``STORE_READ_ONLY``)."""
    where = os.fspath(path)
    text = exc.strerror or str(exc)
    if exc.errno in _FULL_ERRNOS:
        return _full(where, text)
    if exc.errno == errno.EROFS:
        return _read_only(where, text)
    return ErrorCode.STORE_IO, f"--db: {where}: {text}"


class SQLiteFileError(ClaimFsmError):
    """A SQLite file that cannot be used, as :func:`sqlite_failure` classifies it."""

    code = ErrorCode.STORE_IO

    @classmethod
    def from_sqlite(cls, exc: sqlite3.Error, path: str | os.PathLike[str]) -> SQLiteFileError:
        """The error for what SQLite said about ``path`` (``field`` is ``db``)."""
        code, msg = sqlite_failure(exc, path)
        return cls(msg, code=code, field="db")


def disk_error(exc: sqlite3.Error, conn: sqlite3.Connection) -> SQLiteFileError | None:
    """The error for a write of ``conn`` that failed because its disk is full or
    read-only (``STORE_FULL``, ``STORE_READ_ONLY``), else ``None`` (the caller's own
    handling stands)."""
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
        path = row[2] if row and row[2] else ":memory:"
    except sqlite3.Error:
        path = ":memory:"
    code, msg = sqlite_failure(exc, path)
    if code in (ErrorCode.STORE_FULL, ErrorCode.STORE_READ_ONLY):
        return SQLiteFileError(msg, code=code, field="db")
    return None
