"""The SQLite side of the forks index (:mod:`claimfsm.state.lineage`).

``st_catalog`` has, for a session that is a fork, its parent's sid, the parent revision
it starts from and when it was made (``parent``, ``parent_rev``, ``forked``), written by
the commit that lands the fork's own ``Forked`` revision in the same transaction; a
partial index on ``parent`` makes a session's forks one seek. Ordinary steps write
nothing here.

A file from before the index gets the columns on its first writable open
(:func:`claimfsm.state.sqlite.schema.init_schema`) and ``forks = fill`` in ``st_meta`` when it
holds sessions; the first lookup that may write reads every head once to fill them. A
file read-only and still without them is scanned (:func:`~claimfsm.state.lineage.scan_forks`).

The copy itself: :func:`restamp_rows` checks the source rows against their hashes and
re-chains them under the fork's sid in one pass (PostgreSQL's fork uses it too).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import orjson

from claimfsm.state import codec
from claimfsm.state.codec import STATE_FIELDS
from claimfsm.state.lineage import link_of, scan_forks
from claimfsm.state.model import Revision, SessionState, trusted
from claimfsm.state.sqlite.db import ChainBroken
from claimfsm.state.sqlite.decode import ChainDecoder
from claimfsm.state.sqlite.rows import SNAPSHOT, Entry, Row

__all__ = ["COLUMNS", "INDEX", "PARENT", "Restamped", "forked_entry",
           "forks_page", "restamp_rows"]

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


class Restamped(NamedTuple):
    """What :func:`restamp_rows` made: the copied rows (canonical bytes), the last copy's
    field bytes and digests (a commit on the copy needs them; here they cost nothing
    more) and, when asked for, the copy's revisions 0 and ``at`` as cache entries."""

    rows: list[Row]
    ebytes: tuple[bytes, ...]
    digests: tuple[bytes, ...]
    first: Entry | None = None
    last: Entry | None = None


_SID_INDEX = STATE_FIELDS.index("sid")


def restamp_rows(rows: list[Row], sid: str, new_sid: str, *,
                 fetch: Callable[[str], bytes] | None = None,
                 head: Revision | None = None) -> Restamped:
    """Copies of ``rows`` (revisions ``0..at`` of ``sid``, canonical bytes) for session
    ``new_sid``: states re-stamped, hashes re-chained.

    Delta rows never carry ``sid`` (it cannot change within a session), so only
    snapshots are re-encoded; blobs are shared, never copied. Raises :class:`ChainBroken`
    if the source chain does not verify (a fork must not launder a broken chain).

    With ``fetch`` (a blob by its digest), the copy's revision 0 and revision ``at`` come
    back decoded too (``first``, ``last``), built from this pass over the rows rather
    than by decoding the copy again; ``head``, the source's revision ``at`` when the
    caller holds it decoded already, is re-stamped instead of being built.
    """
    source = ChainDecoder(sid)
    stamped = orjson.dumps(new_sid)
    stamped_digest = codec.field_digest("sid", stamped)
    parent = codec.GENESIS
    out: list[Row] = []
    digests: list[bytes] = []
    first = last = None
    end = len(rows) - 1
    for i, row in enumerate(rows):
        rev, parent_rev, kind, fsm, skill, ts, body, extra, stored = row
        source.feed(kind, body)
        if kind != SNAPSHOT and _SID_INDEX in source.changed:
            raise ChainBroken(f"source chain of {sid!r} changes its sid at revision {rev}",
                              sid=sid, rev=rev)
        digests = source.digests()
        header = codec.header_bytes(sid, rev, parent_rev, fsm, skill, ts)
        if rev != i or codec.revision_hash(source.parent_hash, header, extra,
                                           digests) != stored:
            raise ChainBroken(f"source chain of {sid!r} is broken at revision {rev}",
                              sid=sid, rev=rev)
        source.advance(stored)
        decoded = None
        if fetch is not None and ((i == 0 and end) or (i == end and head is None)):
            decoded = source.revision(row, fetch).revision
        if kind == SNAPSHOT:
            fields = list(source.ebytes)
            fields[_SID_INDEX] = stamped
            body = codec.snapshot_body(fields)
        # The copy's fields are the source's with ``sid`` re-stamped (deltas never carry
        # it), so its digests are the source's but one: no second decoder needed.
        digests[_SID_INDEX] = stamped_digest  # a fresh list: the decoder keeps its own
        header = codec.header_bytes(new_sid, rev, parent_rev, fsm, skill, ts)
        parent = codec.revision_hash(parent, header, extra, digests)
        out.append((rev, parent_rev, kind, fsm, skill, ts, bytes(body), bytes(extra), parent))
        if decoded is not None or (i == end and head is not None):
            ebytes = list(source.ebytes)
            ebytes[_SID_INDEX] = stamped
            entry = Entry(_stamp(decoded or head, new_sid), parent, tuple(ebytes),
                          tuple(digests))
            if i == 0 and end:
                first = entry
            else:
                last = entry
    ebytes = list(source.ebytes)
    ebytes[_SID_INDEX] = stamped
    return Restamped(out, tuple(ebytes), tuple(digests), first, last)


def _stamp(revision: Revision | None, new_sid: str) -> Revision:
    assert revision is not None
    state = trusted(SessionState, {**revision.state.__dict__, "sid": new_sid})
    return trusted(Revision, {**revision.__dict__, "sid": new_sid, "state": state})


def forked_entry(source: Revision, new_sid: str, copies: Restamped) -> Entry:
    """The cache entry of a fork's copied head: ``source`` (the revision it copies, its
    rows just checked against their hashes by :func:`restamp_rows`) with the sid
    re-stamped, and the copy's field bytes, digests and hash."""
    return Entry(_stamp(source, new_sid), copies.rows[-1][8], copies.ebytes, copies.digests)
