"""Where a ``--db`` value points and the one function that opens its session store.

A ``--db`` value is a SQLite file (sessions and the evidence index share it) or a
``postgresql://`` URL (sessions in PostgreSQL; the evidence index is named by the URL's
``index`` query parameter: a SQLite/FTS5 file or, percent-encoded, a ``postgresql://``
URL of an index shared by a cluster; the bundled demo corpus in memory when there is
none). The CLI's ``engine()`` and ``claimfsm.engine.runtime.Engine.open`` both
come through here, so every command takes either form.

A value is parsed once, by :func:`locate`, into a :class:`Location`; the location is what
travels on (to :func:`open_store`, the engine, batch workers), never the text again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from claimfsm._base.record import Record
from claimfsm.state.errors import NoStore, StoreError
from claimfsm.state.store import StateStore

__all__ = ["URL_SCHEMES", "Location", "NoStore", "locate", "open_store"]

URL_SCHEMES = ("postgresql://", "postgres://")


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Location(Record, frozen=True):
    """``store``: the file or URL of the session store (``index`` parameter removed);
    ``index``: the SQLite file of the evidence index, ``None`` for an in-memory one;
    ``url``: whether the store is a server; ``text``: the value as given, which messages
    name. Frozen and hashable: a batch keys its engines by it, and it pickles to Ray
    workers as it is."""

    store: str
    index: str | None
    url: bool
    text: str

    def __init__(self, store: str, index: str | None, url: bool, text: str) -> None:
        self._fill(store=store, index=index, url=url, text=text)


def locate(db: str | os.PathLike[str] | Location) -> Location:
    """Split a ``--db`` value into the session store and the evidence index (a location
    is returned as it is, so a caller may take either)."""
    if isinstance(db, Location):
        return db
    text = os.fspath(db)
    if not text.startswith(URL_SCHEMES):
        return Location(store=text, index=text, url=False, text=text)
    parts = urlsplit(text)
    query = parse_qsl(parts.query, keep_blank_values=True)
    index = [value for key, value in query if key == "index"]
    if not index:
        return Location(store=text, index=None, url=True, text=text)
    if not index[-1]:
        raise StoreError("--db: the URL's index parameter is empty (index=FILE)", field="index")
    rest = urlencode([(key, value) for key, value in query if key != "index"])
    return Location(store=urlunsplit(parts._replace(query=rest)), index=index[-1], url=True,
                    text=text)


def open_store(
    db: str | os.PathLike[str] | Location,
    *,
    durability: Literal["full", "normal", "group"] = "normal",
    create: bool = True,
    readonly: bool = False,
) -> StateStore:
    """The session store ``db`` (a value or its :class:`Location`) points to:
    :class:`~claimfsm.state.sqlite.SQLiteStore` for a file,
    :class:`~claimfsm.state.postgres.PostgresStore` for a URL (needs the ``postgres`` extra).

    With ``create=False`` a missing file, or a database without the store's tables, is
    :class:`NoStore` instead of being created; ``readonly=True`` (implies ``create=False``)
    opens a SQLite file read-only, so a command that only reads can never alter it.
    Another program's SQLite file is refused (``STORE_FOREIGN``) and a file that is not
    SQLite too (``STORE_NOT_DATABASE``), never written into. ``durability`` applies to
    SQLite only; a server's durability is its ``synchronous_commit`` setting.
    """
    where = locate(db)
    if not where.url:
        return _open_sqlite(where.store, durability, create=create, readonly=readonly)
    try:
        from claimfsm.state.postgres import PostgresStore
    except ImportError as exc:
        raise StoreError(
            f"--db: a postgresql:// URL needs psycopg: pip install 'claimfsm[postgres]' ({exc})",
            field="db") from exc
    return PostgresStore(where.store, create=create and not readonly)


def _open_sqlite(path: str, durability: Literal["full", "normal", "group"], *, create: bool,
                 readonly: bool) -> StateStore:
    from claimfsm.state.sqlite.probe import ForeignStore, probe
    from claimfsm.state.sqlite.store import SQLiteStore

    kind = probe(path)
    if kind == "foreign":
        raise ForeignStore(f"--db: {path} is another program's SQLite database (no claimfsm "
                           "tables); claimfsm will not write into it", field="db")
    if kind != "claimfsm" and (readonly or not create):
        what = "no such file" if kind == "missing" else "not a claimfsm database (empty)"
        raise NoStore(f"--db: {what}: {path}", field="db")
    return SQLiteStore(path, durability=durability, readonly=readonly)
