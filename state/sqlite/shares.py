"""Forks that share their parent's rows (SQLite schema 7).

A fork made with its own revision (:meth:`SQLiteStore.fork
<claimfsm.state.sqlite.store.SQLiteStore.fork>` with ``then``) copies no row: its
``st_sessions`` row (written anyway, so sharing costs no page of its own) lists the
*segments* of its prefix in ``shares``, ``[[lo, hi, src, sid], ...]``: its revisions
``lo..hi`` are the rows ``lo..hi`` of session number ``src``, written under ``sid``.
 A fork of a plain session has one segment (``0..at`` of its parent); a fork of a
fork takes its parent's segments up to ``at`` and then its parent's own rows, so a read
never follows more than one link. Every segment begins with a snapshot (revision 0, or a
fork's first own row, which is always written whole), so a segment decodes by itself.

Readers return a shared revision with the fork's sid (the revision's and its state's),
exactly as a copy would have, and its hash as stored: the parent's. The fork's own first
row is chained onto that hash, so the chain is verified segment by segment, each under
the sid it was written for (:func:`verify_shared`), and then the fork's own rows.

Erasing a session first copies the rows its forks share into each fork, verbatim, and
points the segment at the fork itself (:func:`inline_shares`), in the same transaction:
no fork loses its history and no visible hash changes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import NamedTuple

import orjson

from claimfsm._base.errors import ErrorCode
from claimfsm.state import codec
from claimfsm.state.codec import STATE_FIELDS, CodecError
from claimfsm.state.model import SessionState, trusted
from claimfsm.state.sqlite.rows import Entry, Row
from claimfsm.state.store import ChainCheck

__all__ = ["Share", "dump_shares", "inline_shares", "load_shares", "parse_shares", "restamp",
           "segment_of", "segments_for", "verify_shared"]

_LOAD = "SELECT shares FROM st_sessions WHERE id = ?"
_SID = STATE_FIELDS.index("sid")
_MAX = 0xFFFFFFFF


class Share(NamedTuple):
    """Revisions ``lo..hi`` of a fork are the rows of session number ``src`` at the same
    revisions, written under ``sid``."""

    lo: int
    hi: int
    src: int
    sid: str


def dump_shares(shares: list[Share]) -> str:
    """The ``st_sessions.shares`` text of ``shares``."""
    return orjson.dumps([list(share) for share in shares]).decode()


def parse_shares(text: str | None) -> tuple[Share, ...]:
    """The segments in ``st_sessions.shares`` (``None``: none). :class:`ValueError` (a
    ``CodecError`` for the reader) when the text is not a list of segments."""
    if text is None:
        return ()
    try:
        out = tuple(Share(*item) for item in orjson.loads(text))
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise CodecError(f"st_sessions.shares does not decode: {exc}") from exc
    for share in out:
        if not (type(share.lo) is int and type(share.hi) is int and type(share.src) is int
                and type(share.sid) is str and 0 <= share.lo <= share.hi):
            raise CodecError(f"st_sessions.shares holds a malformed segment {share!r:.80}")
    return out


def load_shares(c: sqlite3.Connection, session: int) -> tuple[Share, ...]:
    """The segments of session number ``session`` (none for a session that is no shared
    fork, and for a file from before schema 7, opened read-only)."""
    try:
        row = c.execute(_LOAD, (session,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such column" in str(exc):
            return ()
        raise
    return () if row is None else parse_shares(row[0])


def segment_of(shares: tuple[Share, ...], rev: int) -> Share | None:
    """The segment holding revision ``rev`` (``None``: the session's own rows)."""
    for share in shares:
        if share.lo <= rev <= share.hi:
            return share
    return None


def segments_for(source: tuple[Share, ...], session: int, sid: str,
                 at: int) -> list[Share]:
    """A fork's segments when it forks session number ``session`` (``sid``, whose own
    segments are ``source``) at ``at``: the source's up to ``at``, then its own rows."""
    out = [s._replace(hi=min(s.hi, at)) for s in source if s.lo <= at]
    start = out[-1].hi + 1 if out else 0
    if start <= at:
        out.append(Share(start, at, session, sid))
    return out


def restamp(entry: Entry, sid: str, *, digests: bool = False) -> Entry:
    """``entry`` (a revision read under another sid) as the revision of session ``sid``:
    same hash, the sid re-stamped in the revision, its state and the field bytes (and
    with ``digests`` the field digests, which a commit onto it needs)."""
    revision = entry.revision
    state = trusted(SessionState, {**revision.state.__dict__, "sid": sid})
    stamped = trusted(type(revision), {**revision.__dict__, "sid": sid, "state": state})
    ebytes = list(entry.ebytes)
    ebytes[_SID] = orjson.dumps(sid)
    known = None
    if digests:
        known = list(entry.digests())
        known[_SID] = codec.field_digest("sid", ebytes[_SID])
    return Entry(stamped, entry.hash, tuple(ebytes), None if known is None else tuple(known))


def inline_shares(c: sqlite3.Connection, session: int) -> None:
    """Before session number ``session`` is erased (inside that transaction): copy the
    rows each live fork shares from it into the fork, verbatim, and point the fork's
    segment at the fork itself; drop the erased session's own segments.

    Forks are found by a scan of the sessions that share anything (an index would be a
    page more for every fork to write; erasing is rare, forking is not)."""
    c.execute("UPDATE st_sessions SET shares = NULL WHERE id = ?", (session,))
    base = session << 32
    for fork, text in c.execute("SELECT id, shares FROM st_sessions WHERE shares IS NOT NULL"
                                " AND EXISTS (SELECT 1 FROM json_each(shares)"
                                " WHERE json_extract(value, '$[2]') = ?)",
                                (session,)).fetchall():
        target = fork << 32
        live = c.execute("SELECT 1 FROM st_revisions WHERE k BETWEEN ? AND ?",
                         (target, target + _MAX)).fetchone()
        shares = list(parse_shares(text))
        for i, share in enumerate(shares):
            if share.src != session or live is None:
                continue
            c.execute("INSERT INTO st_revisions (k, parent_rev, kind, fsm, skill, ts, body,"
                      " extra, hash) SELECT k - ?1 + ?2, parent_rev, kind, fsm, skill, ts,"
                      " body, extra, hash FROM st_revisions WHERE k BETWEEN ?1 + ?3"
                      " AND ?1 + ?4", (base, target, share.lo, share.hi))
            shares[i] = share._replace(src=fork)
        # An erased fork (its row stays, rowless) keeps nothing.
        c.execute("UPDATE st_sessions SET shares = ? WHERE id = ?",
                  (None if live is None else dump_shares(shares), fork))


Rows = Callable[[int, int, int], list[Row]]
Walk = Callable[[str, int, list[Row], int, bytes], ChainCheck]


def verify_shared(sid: str, head: int, shares: tuple[Share, ...], session: int,
                  rows: Rows, walk: Walk) -> ChainCheck:
    """The chain of a shared fork: each segment's rows (``rows(src, lo, hi)``) walked
    under the sid they were written for, from the previous segment's last hash, then the
    fork's own rows; ``walk(sid, head, rows, first, parent_hash)`` checks one run."""
    parent, count = codec.GENESIS, 0
    for share in shares:
        found = rows(share.src, share.lo, share.hi)
        if len(found) != share.hi - share.lo + 1:
            return ChainCheck(sid=sid, revisions=count + len(found), rev=share.lo,
                              problem=ErrorCode.FORK_PARENT_MISSING.value,
                              detail=f"revisions {share.lo}..{share.hi} it shares with"
                                     f" {share.sid!r} are missing")
        check = walk(share.sid, share.hi, found, share.lo, parent)
        if not check.ok:
            return check.model_copy(update={"sid": sid, "revisions": count + check.revisions})
        count += len(found)
        parent = found[-1][8]
    start = shares[-1].hi + 1 if shares else 0
    own = rows(session, start, _MAX)
    check = walk(sid, head, own, start, parent)
    return check.model_copy(update={"revisions": count + check.revisions})
