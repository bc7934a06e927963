"""The SQLite side of the forks index (:mod:`claimfsm.state.lineage`).

``st_catalog`` has, for a session that is a fork, its parent's sid, the parent revision
it starts from and when it was made (``parent``, ``parent_rev``, ``forked``), written by
the commit that lands the fork's own ``Forked`` revision in the same transaction; a
partial index on ``parent`` makes a session's forks one seek. Ordinary steps write
nothing here.

A file from before the index gets the columns on its first writable open
(:func:`claimfsm.state.sqlite.db.init_schema`) and ``forks = fill`` in ``st_meta`` when it
holds sessions; the first lookup that may write reads every head once to fill them. A
file read-only and still without them is scanned (:func:`~claimfsm.state.lineage.scan_forks`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from claimfsm.state.lineage import fork_mark, link_of, scan_forks
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.db import ChainBroken
from claimfsm.state.sqlite.decode import ChainDecoder
from claimfsm.state.sqlite.rows import Encoded, Entry, Row, bound, encode_revision
from claimfsm.state.store import StateStore

__all__ = ["COLUMNS", "INDEX", "PARENT", "OwnRevision", "first_entry", "forks_page",
           "own_revision"]

#: The columns ``st_catalog`` gains (the index's data).
COLUMNS = ("parent TEXT", "parent_rev INTEGER", "forked TEXT")
#: A session's forks by parent, in creation order.
INDEX = ("CREATE INDEX IF NOT EXISTS st_catalog_parent ON st_catalog (parent, id)"
         " WHERE parent IS NOT NULL")
#: Record a fork (params: session id, parent sid, parent revision, when).
PARENT = ("INSERT INTO st_catalog (id, parent, parent_rev, forked) VALUES (?, ?, ?, ?)"
          " ON CONFLICT (id) DO UPDATE SET parent = excluded.parent,"
          " parent_rev = excluded.parent_rev, forked = excluded.forked")
_FORKS = ("SELECT s.sid, c.parent_rev, c.forked FROM st_catalog c JOIN st_sessions s"
          " ON s.id = c.id WHERE c.parent = ? ORDER BY c.id LIMIT ?")

Run = Callable[[Callable[[sqlite3.Connection], Any]], Any]


@dataclass(frozen=True, slots=True)
class OwnRevision:
    """A fork's own revision, encoded to land with its copy: the row's columns after the
    key, its parent in the forks index (``None``: it carries no ``Forked`` event)."""

    revision: Revision
    encoded: Encoded
    params: tuple[Any, ...]
    mark: tuple[str, int, str] | None


def own_revision(revision: Revision, copied: Entry, snapshot_every: int) -> OwnRevision:
    """``revision`` (what a fork's ``then`` built) encoded over the copy's head
    ``copied``, checked as :meth:`~claimfsm.state.sqlite.store.SQLiteStore.commit` checks
    a revision with ``expected_rev`` the copy's head: the same row, byte for byte, as
    that commit would write. :class:`RevConflict` if it does not follow the copy."""
    head = copied.revision
    bad = StateStore._bad_move(revision, head.rev, sid=head.sid)
    if bad is not None:
        raise bad
    encoded = encode_revision(revision, copied, snapshot_every)
    mark = fork_mark(revision) if revision.events else None
    return OwnRevision(revision, encoded, bound(encoded.row), mark)


def forks_page(read: Run, write: Run | None, sessions: Callable[[], Sequence[str]],
               heads: Callable[[Sequence[str]], dict[str, Revision]], sid: str,
               limit: int) -> list[dict[str, Any]]:
    """The forks of ``sid`` from the index (``write``: ``None`` while the file is only
    read), filling an old file's index first or scanning one that cannot be filled."""
    state = read(_state)
    if state == "fill" and write is not None:
        rows = []
        names = list(sessions())
        for start in range(0, len(names), 500):
            for name, head in heads(names[start: start + 500]).items():
                link = link_of(head)
                if link is not None and isinstance(link.get("rev"), int):
                    rows.append((name, str(link.get("sid", "")), link["rev"],
                                 str(link.get("at", head.ts))))

        def fill(c: sqlite3.Connection) -> None:
            c.executemany("INSERT INTO st_catalog (id, parent, parent_rev, forked) SELECT id,"
                          " ?2, ?3, ?4 FROM st_sessions WHERE sid = ?1 ON CONFLICT (id) DO"
                          " UPDATE SET parent = excluded.parent, parent_rev ="
                          " excluded.parent_rev, forked = excluded.forked", rows)
            c.execute("DELETE FROM st_meta WHERE key = 'forks'")

        write(fill)
        state = "ok"
    if state != "ok":
        return scan_forks(sessions(), heads, sid, limit)
    return [{"sid": name, "rev": rev, "at": at}
            for name, rev, at in read(lambda c: c.execute(_FORKS, (sid, limit)).fetchall())]


def _state(c: sqlite3.Connection) -> str:
    # "ok", "fill" (sessions from before the index) or "absent" (a read-only old file).
    if c.execute("SELECT count(*) FROM pragma_table_info('st_catalog') WHERE name = 'parent'"
                 ).fetchone() != (1,):
        return "absent"
    row = c.execute("SELECT value FROM st_meta WHERE key = 'forks'").fetchone()
    return "ok" if row is None else str(row[0])


def first_entry(sid: str, row: Row, fetch: Callable[[str], bytes]) -> Entry:
    """The cache entry of revision 0 of fork ``sid`` from its copied row (a snapshot
    already stamped ``sid``, whose source row was just checked against its hash)."""
    decoder = ChainDecoder(sid)
    try:
        decoder.feed(row[2], row[6])
        return decoder.revision(row, fetch)
    except (ValueError, TypeError, KeyError) as exc:  # CodecError, or rows of wrong types
        raise ChainBroken(f"the copy of revision 0 does not decode: {exc}", sid=sid) from exc
