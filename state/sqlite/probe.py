"""What a ``--db`` file is, found without writing to it: missing, empty, a claimfsm store,
another program's SQLite database, or not SQLite at all. Commands that must not create or
alter a database ask here first, and refuse with a ``STORE_*`` code.

The probe reads through a :class:`~claimfsm._base.sqlite_read.ReadOnlyLink`, so it
sees what the WAL holds (after a checkpoint that a full disk cut short, the main file
alone may not even be a consistent database) and creates no ``-wal`` or ``-shm`` file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Literal

from claimfsm._base.errors import ErrorCode
from claimfsm._base.sqlite import sqlite_failure
from claimfsm._base.sqlite_read import ReadOnlyLink, read_mode
from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite.db import SCHEMA_VERSION

__all__ = [
    "KNOWN_SCHEMAS",
    "ForeignStore",
    "Kind",
    "NotADatabase",
    "StoreIOError",
    "before_writing",
    "check_file",
    "probe",
    "refuse_unknown",
    "schema_of",
    "store_error",
]

Kind = Literal["missing", "empty", "claimfsm", "foreign"]
"""``empty``: no tables, or only claimfsm's evidence index (no sessions yet)."""

KNOWN_SCHEMAS = tuple(str(v) for v in range(1, int(SCHEMA_VERSION) + 1))
"""The ``st_meta`` schema versions this claimfsm reads (older ones are upgraded on the
first writable open; see state/sqlite/schema.py)."""

_MAGIC = b"SQLite format 3\x00"


class ForeignStore(StoreError):
    """The file is a SQLite database of another program (no claimfsm ``st_`` tables)."""

    code = ErrorCode.STORE_FOREIGN


class NotADatabase(StoreError):
    """The file is not a SQLite database (or its header is damaged)."""

    code = ErrorCode.STORE_NOT_DATABASE


class StoreIOError(StoreError):
    """The file cannot be opened, read or written (permissions, a missing folder, a
    device or another file that is not a regular one)."""

    code = ErrorCode.STORE_IO


def check_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists; :class:`StoreIOError` when it is not a regular file (a
    folder, ``/dev/null``, a pipe): SQLite would create its ``-journal``, ``-wal`` and
    ``-shm`` files next to it, in ``/dev`` for a device."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreIOError(f"--db: cannot read {p}: {exc.strerror}", field="db") from exc
    if stat.S_ISDIR(mode):
        raise StoreIOError(f"--db: {p} is a folder, not a file", field="db")
    if not stat.S_ISREG(mode):
        raise StoreIOError(f"--db: {p} is not a regular file (a device, a pipe or a "
                           "socket); claimfsm keeps sessions in a file", field="db")
    return True


def probe(path: str | os.PathLike[str]) -> Kind:
    """Classify ``path`` reading only: its header, then its table names; a claimfsm
    store of a schema version this claimfsm does not know is refused here, before
    anything opens it for writing."""
    p = Path(path)
    if not check_file(p):
        return "missing"
    try:
        with p.open("rb") as fh:
            head = fh.read(len(_MAGIC))
    except OSError as exc:
        raise StoreIOError(f"--db: cannot read {p}: {exc.strerror}", field="db") from exc
    if not head:
        return "empty"
    if head != _MAGIC:
        raise NotADatabase(f"--db: {p} is not a SQLite database", field="db")
    names, schema = _read_names(p)
    if "st_meta" in names:
        refuse_unknown(schema)
        return "claimfsm"
    # The evidence index (ev_ tables) may be made before the store: still our file.
    ours = all(n.startswith(("st_", "ev_", "sqlite_")) for n in names)
    return "empty" if ours else "foreign"


def before_writing(path: str) -> bool:
    """What a writable open checks first (a file it may create, or a store it may write):
    not a device (nothing is created beside one), not a store of a schema version this
    claimfsm does not know (refused before the first connection switches it to WAL).
    Returns whether a store is there as this version writes it (nothing to upgrade)."""
    if path == ":memory:" or not check_file(path):
        return False
    with open(path, "rb") as fh:
        if fh.read(len(_MAGIC)) != _MAGIC:
            return False  # empty (a new store) or not SQLite: the connection says which
    names, schema = _read_names(Path(path))
    refuse_unknown(schema)
    return (schema == SCHEMA_VERSION and "st_catalog" in names and "st_timers" in names
            and "st_timers_queue" in names and "st_catalog_parent" in names
            and "st_keys" in names)


def refuse_unknown(schema: str | None) -> None:
    """:class:`StoreError` for a ``st_meta`` schema version this claimfsm cannot read."""
    if schema is not None and schema not in KNOWN_SCHEMAS:
        raise StoreError(f"--db: st_ schema version {schema}, expected {KNOWN_SCHEMAS[-1]}"
                         " (a newer claimfsm's store: the file was left as it was)",
                         field="db")


def schema_of(path: str | os.PathLike[str]) -> str | None:
    """The ``st_meta`` schema version of the store at ``path`` (``None``: no store)."""
    return _read_names(Path(path))[1]


def _read_names(p: Path) -> tuple[set[str], str | None]:
    def read(c: sqlite3.Connection) -> tuple[set[str], str | None]:
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
        if "st_meta" not in names:
            return names, None
        row = c.execute("SELECT value FROM st_meta WHERE key = 'schema'").fetchone()
        return names, None if row is None else str(row[0])

    path = os.fspath(p)
    if read_mode(path) == "copy":
        # A WAL without its -shm would be read through a copy of the whole file. Table
        # names and the schema version are almost always in the main file already: read
        # it alone first, and copy only when that fails (a checkpoint cut short) or
        # finds no store while the WAL may hold one.
        try:
            conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
            try:
                found = read(conn)
            finally:
                conn.close()
            if "st_meta" in found[0]:
                return found
        except sqlite3.Error:
            pass
    try:
        link = ReadOnlyLink(path)
        try:
            return link.run(read)
        finally:
            link.close()
    except sqlite3.Error as exc:
        raise store_error(exc, p) from exc


def store_error(exc: sqlite3.Error, path: str | os.PathLike[str]) -> StoreError:
    """A ``STORE_*`` error for what SQLite said about ``path``."""
    code, msg = sqlite_failure(exc, path)
    if code == ErrorCode.STORE_NOT_DATABASE:
        return NotADatabase(msg, field="db")
    return StoreIOError(msg, code=code, field="db")
