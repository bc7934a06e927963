"""The cold read of one revision: one statement fetches exactly the rows it needs, and
they are decoded straight into the revision, with nothing else built on the way.

The chain walk in :mod:`claimfsm.state.sqlite.decode` keeps what fsck, compact, fork and
``history`` need at every row (field bytes, digests, the previous plain values). A single
read needs only the last state, so this path parses the snapshot once, applies the
deltas to the parsed values in place (every value here was parsed by this call, so
nothing is shared yet), resolves blob references only when a row holds one, and leaves
the field bytes for the cache entry to serialise if a commit ever needs them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from claimfsm.state import codec, envref
from claimfsm.state.codec import STATE_FIELDS, CodecError
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.rows import (
    DELTA,
    SNAPSHOT,
    Entry,
    Row,
    Since,
    builder,
    inflate,
    state_from,
)
from claimfsm.state.sqlite.stamp import ts_text

__all__ = ["CHAIN_ROWS", "PAGE_ROWS", "READ_ROWS", "checked_page", "page_rows", "read_revision"]

# The key of the nearest snapshot at or below the target (?1: the session's first key).
_SNAPSHOT_AT = ("SELECT k FROM st_revisions WHERE k BETWEEN ?1 AND ?2 AND kind = 0"
                " ORDER BY k DESC LIMIT 1")
# Packed bodies start with 'x' (a range test of the blob: ``substr`` would copy a byte).
_UNPACKED = "iif(body >= x'78' AND body < x'79', NULL, body)"

# One statement, so one read transaction (a concurrent compact cannot mix two layouts)
# and one round of SQLite's fixed costs. The first row is the target's own columns, its
# scalars folded into one JSON array but ``ts`` (JSON has no bytes for a packed one,
# state/sqlite/stamp.py). For a based target (kind ``1 + d``, state/sqlite/rows.py) the
# array is preceded by the body of the snapshot ``d`` revisions below and the target's,
# composed by SQLite into one JSON text, and that is all: the rows between are not read
# (the search below stops at the target itself and keeps nothing). The text is ``NULL``
# when no snapshot is at that key or either body is packed: :data:`CHAIN_ROWS` then. For
# any other target the rows ``(k, kind, body, NULL)`` follow: the nearest snapshot at or
# below it and every row up to it. Other columns of the chain rows are not fetched: each
# column of each row costs about 0.2 µs, each row more. The search yields ``NULL`` for a
# based target, so the range is empty without a second seek (~2k instructions a read).
READ_ROWS = (
    "SELECT extra, hash, CAST(CASE WHEN t.kind > 1 THEN '[' || (SELECT " + _UNPACKED
    + " FROM st_revisions WHERE k = t.k - t.kind + 1 AND k >= ?1 AND kind = 0) || ',' || "
    + _UNPACKED.replace("body", "t.body")
    + " || ',' || json_array(parent_rev, fsm, skill, t.kind) || ']'"
    " ELSE json_array(parent_rev, fsm, skill) END AS BLOB), ts FROM st_revisions AS t"
    " WHERE k = ?2 UNION ALL SELECT * FROM (SELECT k, kind, body, NULL FROM st_revisions"
    " WHERE k BETWEEN (SELECT iif(kind = 0, k, NULL) FROM st_revisions WHERE k BETWEEN ?1"
    " AND ?2 AND (kind = 0 OR (k = ?2 AND kind > 1)) ORDER BY k DESC LIMIT 1) AND ?2"
    " ORDER BY k)"
)

# :data:`READ_ROWS` for every kind of target: the target's columns (its scalars as one
# JSON array), then the snapshot and every row up to the target. Read when a ``BASED``
# target's snapshot or body is packed.
CHAIN_ROWS = (
    "SELECT extra, hash, CAST(json_array(parent_rev, fsm, skill) AS BLOB), ts"
    " FROM st_revisions WHERE k = ?2 UNION ALL SELECT * FROM (SELECT k, kind, body, NULL"
    " FROM st_revisions WHERE k <= ?2 AND k >= (" + _SNAPSHOT_AT + ") ORDER BY k)"
)

# A page of history (``?2``..``?3``, keys): its rows and those back to the nearest snapshot
# at or below its first revision, found by seeking the key backwards from there. One
# statement for the reason above; no row before the snapshot is read.
PAGE_ROWS = (
    "SELECT k & 4294967295, parent_rev, kind, fsm, skill, ts, body, extra, hash"
    " FROM st_revisions WHERE k <= ?3 AND k >= (SELECT k FROM st_revisions"
    " WHERE k BETWEEN ?1 AND ?2 AND kind = 0 ORDER BY k DESC LIMIT 1) ORDER BY k"
)

_FIELDS = list(STATE_FIELDS)
_EMPTY: dict[str, Any] = dict.fromkeys(STATE_FIELDS)
_NUL = b"\\u0000"
# ``bytes.find``, not ``in``: ``in`` first tries its operand as an integer, and the
# TypeError it makes and drops costs ~1.7k instructions a test.
_find = bytes.find
_COUNT = len(STATE_FIELDS)
_loads = orjson.loads
_unpack = codec.unpack_row
OP_SET, OP_APPEND, OP_UPDATE = codec.OP_SET, codec.OP_APPEND, codec.OP_UPDATE
_revision = builder(Revision)
_NO_FIELDS: frozenset[str] = frozenset()
# A composed head starts with the snapshot (an array; schema 2's named form: an object),
# a bare header with a number or null.
_COMPOSED = (b"[", b"{")
AGAIN = object()
"""What :func:`read_revision` returns when the rows must be read with :data:`CHAIN_ROWS`."""


def _apply(value: Any, op: Any) -> Any:
    """``op`` applied to ``value``, in place where it can be (the caller owns it)."""
    if type(op) is not list or not op:
        raise CodecError(f"malformed field op {op!r:.80}")
    code = op[0]
    if code == OP_SET and len(op) == 2:
        return op[1]
    if (code == OP_UPDATE and len(op) == 3 and type(value) is dict and type(op[1]) is dict
            and type(op[2]) is list):
        for key in op[2]:
            value.pop(key, None)
        value.update(op[1])
        return value
    if code == OP_APPEND and len(op) == 2 and type(value) is list and type(op[1]) is list:
        value.extend(op[1])
        return value
    raise CodecError(f"field op {op!r:.80} does not apply to its parent value")


def _plain(enc: dict[str, Any], fetch: Callable[[str], bytes]) -> dict[str, Any]:
    """``enc`` with blob references resolved, field by field (only where one may be)."""
    out: dict[str, Any] = {}
    for name, value in enc.items():
        kind = type(value)
        if kind is str:
            if value[:1] == "\x00":
                value = codec.resolve(value, fetch)
        elif (kind is dict or kind is list) and value and _find(orjson.dumps(value), _NUL) >= 0:
            value = codec.resolve(value, fetch)
        out[name] = value
    return out


def _check_chain(rows: list[Any], target: int) -> None:
    """Check that ``rows[1:]`` run from a snapshot to ``target`` without a gap."""
    n = len(rows) - 1
    if n and (rows[-1][0] != target or rows[1][0] != target - n + 1):
        rows[1:] = sorted(rows[1:])  # SQL does not promise the order of a compound select
        if rows[-1][0] != target or rows[1][0] != target - n + 1:
            raise CodecError(f"the rows before revision {target & 0xFFFFFFFF} have a gap")
    if not n or rows[1][1] != SNAPSHOT:
        raise CodecError("delta without a base snapshot")


def read_revision(
    sid: str, rev: int, target: int, rows: list[Any], fetch: Callable[[str], bytes]
) -> Entry | object | None:
    """Revision ``rev`` of ``sid`` from the rows of :data:`READ_ROWS` or
    :data:`CHAIN_ROWS` (run with the session's first and the target's keys), ``None`` if
    there is no such revision, or :data:`AGAIN` when :data:`CHAIN_ROWS` must be read.

    Raises :class:`CodecError` (or another ``ValueError``/``TypeError``) on rows that
    do not decode.
    """
    if not rows or type(rows[0][0]) is int:  # no target row: only chain rows, if any
        return None
    extra, digest, header, ts = rows[0]
    if type(digest) is not bytes or type(extra) is not bytes:
        raise CodecError("the row's hash or envelope is not a blob")
    if extra[:1] == b"x":
        extra = _unpack(extra)
    referenced = envref.is_referenced(extra)
    if referenced:  # the JSON follows the canonical bytes' digest (state/envref.py)
        extra = extra[envref.HEAD:]
    if header is None:  # a based row whose body or snapshot is packed
        return AGAIN
    # A copy of a dict of every field takes the values without growing it key by key.
    enc = _EMPTY.copy()
    since: Since | None = None
    if len(rows) == 1 and header[1:2] in _COMPOSED:
        # A based row: [snapshot, ops, header + kind] composed by SQLite, its envelope.
        parsed = _loads(header[:-1] + b"," + extra + b"]")
        if len(parsed) != 4:
            raise CodecError("a row body is not one JSON value")
        snapshot, ops, head = parsed[0], parsed[1], parsed[2]
        if type(snapshot) is not list or len(snapshot) != _COUNT:  # schema 2's named form
            snapshot = codec.snapshot_values(snapshot)
        enc.update(zip(_FIELDS, snapshot))  # noqa: B905 (the count is checked)
        _apply_all(enc, (ops,))
        if type(head) is not list or len(head) != 4:
            raise CodecError("the row's header is not [parent_rev, fsm, skill, kind]")
        since = (rev + 1 - head.pop(), frozenset(ops))  # ops: a dict, _apply_all checked
        refs = _find(header, _NUL) >= 0
    else:
        if type(header) is not bytes:
            raise CodecError("the row's header is not a blob")
        _check_chain(rows, target)
        # The snapshot, the deltas, the header and the envelope are parsed by one call,
        # joined into one JSON array: a body that is not one JSON value makes the count
        # differ.
        bodies: list[bytes] = []
        append = bodies.append
        for _, kind, body, _ in rows[1:]:
            if bodies and (type(kind) is not int or kind < DELTA):
                raise CodecError(f"unknown row kind {kind}")
            append(body if body[:1] != b"x" else _unpack(body))
        append(header)
        append(extra)
        text = b"[" + b",".join(bodies) + b"]"
        parsed = _loads(text)
        if len(parsed) != len(bodies):
            raise CodecError("a row body is not one JSON value")
        refs = _find(text, _NUL) >= 0 and any(_find(body, _NUL) >= 0 for body in bodies[:-2])
        enc.update(zip(_FIELDS, codec.snapshot_values(parsed[0])))  # noqa: B905 (checked)
        if len(parsed) > 3:
            _apply_all(enc, parsed[1:-2])
        else:  # the target is the snapshot
            since = (rev, _NO_FIELDS)
        head = parsed[-2]
    values = tuple(enc.values())
    value = parsed[-1]
    if type(value) is not list or len(value) != 2 or type(value[1]) is not list:
        raise CodecError("envelope/events are not [envelope, events]")
    # Without a reference, the encoded values are the plain ones: the parsed dict
    # becomes the state's own.
    plain = _plain(enc, fetch) if refs else enc
    state = state_from(plain)
    if referenced:
        value = envref.resolve(value, fetch, state.__dict__.__getitem__)
    elif _find(extra, _NUL) >= 0:
        value = codec.resolve(value, fetch)
    parent_rev, fsm, skill = head
    if type(ts) is not str:
        ts = ts_text(ts)
    revision = _revision({
        "sid": sid, "rev": rev, "parent_rev": parent_rev, "fsm": fsm, "skill": skill,
        "envelope": value[0], "state": state, "ts": ts, "events": value[1],
    })
    return Entry(revision, digest, None, None, values, (), since)


def _apply_all(enc: dict[str, Any], deltas: Sequence[Any]) -> None:
    """The parsed ``deltas`` (oldest first) applied to the encoded fields ``enc``."""
    for ops in deltas:
        if type(ops) is not dict:
            raise CodecError("row body is not an object")
        for name, op in ops.items():
            # The common op (a set), inlined; a name that is no field is never in ``enc``.
            if type(op) is list and len(op) == 2 and op[0] == OP_SET and name in enc:
                enc[name] = op[1]
            elif name not in enc:
                raise CodecError(f"delta names unknown field {name!r}")
            else:
                enc[name] = _apply(enc[name], op)


def page_rows(conn: sqlite3.Connection, session: int, start: int, last: int) -> list[Row]:
    """The rows of :data:`PAGE_ROWS` for revisions ``start..last`` of session number
    ``session``, oldest first, checked to run from a snapshot through ``last`` without a
    gap (else :class:`CodecError`)."""
    base = session << 32
    return checked_page(
        inflate(conn.execute(PAGE_ROWS, (base, base + start, base + last)).fetchall()), start,
        last)


def checked_page(rows: list[Row], start: int, last: int) -> list[Row]:
    """``rows`` (a snapshot, then deltas through revision ``last``), or
    :class:`CodecError` when none is at or before ``start`` or a revision is missing."""
    if not rows:
        raise CodecError(f"no snapshot at or before revision {start}")
    if rows[-1][0] != last or len(rows) != last - rows[0][0] + 1:
        raise CodecError(f"the rows {rows[0][0]}..{last} have a gap")
    return rows
