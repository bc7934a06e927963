"""What a ``--db`` file is, found without writing to it: missing, empty, a claimfsm store,
another program's SQLite database, or not SQLite at all. Commands that must not create or
alter a database ask here first, and refuse with a ``STORE_*`` code.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Literal

from claimfsm._base.errors import ErrorCode
from claimfsm._base.sqlite import sqlite_failure
from claimfsm.state.errors import StoreError

__all__ = [
    "ForeignStore",
    "Kind",
    "NotADatabase",
    "StoreIOError",
    "probe",
    "store_error",
]

Kind = Literal["missing", "empty", "claimfsm", "foreign"]
"""``empty``: no tables, or only claimfsm's evidence index (no sessions yet)."""

_MAGIC = b"SQLite format 3\x00"


class ForeignStore(StoreError):
    """The file is a SQLite database of another program (no claimfsm ``st_`` tables)."""

    code = ErrorCode.STORE_FOREIGN


class NotADatabase(StoreError):
    """The file is not a SQLite database (or its header is damaged)."""

    code = ErrorCode.STORE_NOT_DATABASE


class StoreIOError(StoreError):
    """The file cannot be opened, read or written (permissions, a missing folder, a full
    disk, a damaged file)."""

    code = ErrorCode.STORE_IO


def probe(path: str | os.PathLike[str]) -> Kind:
    """Classify ``path`` reading only: its header, then its table names (read-only)."""
    p = Path(path)
    if not p.exists():
        return "missing"
    if p.is_dir():
        raise StoreIOError(f"--db: {p} is a folder, not a file", field="db")
    try:
        with p.open("rb") as fh:
            head = fh.read(len(_MAGIC))
    except OSError as exc:
        raise StoreIOError(f"--db: cannot read {p}: {exc.strerror}", field="db") from exc
    if not head:
        return "empty"
    if head != _MAGIC:
        raise NotADatabase(f"--db: {p} is not a SQLite database", field="db")
    names = _tables(p, immutable=True)
    if not names and Path(f"{p}-wal").exists():
        # The schema may still sit in the write-ahead log only.
        names = _tables(p, immutable=False)
    if "st_meta" in names:
        return "claimfsm"
    # The evidence index (ev_ tables) may be made before the store: still our file.
    ours = all(n.startswith(("st_", "ev_", "sqlite_")) for n in names)
    return "empty" if ours else "foreign"


def _tables(p: Path, *, immutable: bool) -> set[str]:
    # immutable=1 reads the main file alone: no lock, no -wal/-shm files created next to
    # a file that may not even be ours.
    uri = f"{p.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise store_error(exc, p) from exc


def store_error(exc: sqlite3.Error, path: str | os.PathLike[str]) -> StoreError:
    """A ``STORE_*`` error for what SQLite said about ``path``."""
    code, msg = sqlite_failure(exc, path)
    if code == ErrorCode.STORE_NOT_DATABASE:
        return NotADatabase(msg, field="db")
    return StoreIOError(msg, field="db")
