"""The statements every write of revisions shares (a session's rows, blobs, its catalog
label) and the new session itself, whose UNIQUE sid is the check that it does not exist.
Its own module because the store's create and commit and both kinds of fork write
with them, and none of those needs the others.
"""

from __future__ import annotations

import sqlite3

from claimfsm.state.errors import RevConflict

__all__ = ["INSERT_BLOB", "INSERT_ROW", "LABEL", "new_session", "taken"]

INSERT_ROW = (
    "INSERT INTO st_revisions (k, parent_rev, kind, fsm, skill, ts, body, extra, hash)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_BLOB = "INSERT OR IGNORE INTO st_blobs (h, z, data) VALUES (?, ?, ?)"
#: Set a session's verdict label in the catalog (params: session id, label); see
#: state/sqlite/catalog.py.
LABEL = ("INSERT INTO st_catalog (id, verdict) VALUES (?, ?)"
         " ON CONFLICT (id) DO UPDATE SET verdict = excluded.verdict")


def taken(exc: sqlite3.IntegrityError) -> bool:
    """Whether ``exc`` is a key already taken (the compare-and-set lost), not another
    constraint."""
    return "UNIQUE constraint failed" in str(exc)


def new_session(c: sqlite3.Connection, sid: str, shares: str | None = None) -> int:
    """Add session ``sid`` (``shares``: a shared fork's segments,
    :func:`~claimfsm.state.sqlite.shares.dump_shares`); its number. ``sid`` is UNIQUE, so
    the insert itself says whether the session exists (:class:`RevConflict`)."""
    try:
        session = c.execute("INSERT INTO st_sessions (sid, shares) VALUES (?, ?)",
                            (sid, shares)).lastrowid
    except sqlite3.IntegrityError as exc:
        if not taken(exc):
            raise
        raise RevConflict(f"session {sid!r} already exists", sid=sid) from None
    assert session is not None
    return session
