"""Maintenance over the SQLite rows: chain verification, compaction and blob pruning
(the re-stamping a fork needs is in :mod:`claimfsm.state.sqlite.forks`). All of it works
on the encoded form, so none of it needs blob contents except the blob checks themselves.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from claimfsm.state import codec, envref
from claimfsm.state.codec import STATE_FIELDS, CodecError
from claimfsm.state.sqlite.decode import ChainDecoder
from claimfsm.state.sqlite.fields import small_op
from claimfsm.state.sqlite.rows import BASED, DELTA, SNAPSHOT, Row, inflate
from claimfsm.state.store import ChainCheck

__all__ = [
    "SELECT_ROWS",
    "compact_rows",
    "prune_blobs",
    "read_rows",
    "verify_rows",
    "walk_chain",
]

SELECT_ROWS = (
    "SELECT k & 4294967295, parent_rev, kind, fsm, skill, ts, body, extra, hash"
    " FROM st_revisions WHERE k BETWEEN ? AND ? ORDER BY k"
)
_SID_INDEX = STATE_FIELDS.index("sid")
_INDEX = {name: i for i, name in enumerate(STATE_FIELDS)}


def read_rows(
    conn: sqlite3.Connection, session: int, first: int = 0, last: int = 0xFFFFFFFF
) -> list[Row]:
    """Rows ``first..last`` of session number ``session``, oldest first."""
    base = session << 32
    return inflate(conn.execute(SELECT_ROWS, (base + first, base + last)).fetchall())


def _blob_problem(
    conn: sqlite3.Connection, refs: Iterable[tuple[str, str]], checked: set[str]
) -> tuple[str, str] | None:
    """The first missing or corrupt blob among ``refs`` (following page blobs' own refs)."""
    pending = list(refs)
    while pending:
        tag, digest = pending.pop()
        if digest in checked:
            continue
        row = conn.execute(
            "SELECT z, data FROM st_blobs WHERE h=?", (bytes.fromhex(digest),)
        ).fetchone()
        if row is None:
            return "MISSING_BLOB", f"blob {digest[:12]} is missing"
        try:
            raw = codec.unpack_blob(row[0], row[1])
        except CodecError as exc:
            return "BLOB_CORRUPT", f"blob {digest[:12]}: {exc}"
        if hashlib.sha256(raw).hexdigest() != digest:
            return "BLOB_CORRUPT", f"blob {digest[:12]} does not match its hash"
        checked.add(digest)
        if tag == "J":
            try:
                pending.extend(codec.iter_refs(orjson.loads(raw)))
            except orjson.JSONDecodeError:
                return "BLOB_CORRUPT", f"page blob {digest[:12]} is not JSON"
    return None


def verify_rows(
    conn: sqlite3.Connection, sid: str, head: int, rows: list[Row], checked: set[str],
    first: int = 0, parent: bytes = codec.GENESIS,
) -> ChainCheck:
    """Walk a session's rows and report the first broken link (see ``docs/storage.md``);
    ``first``, ``parent``: as :func:`walk_chain`'s."""

    def fetch(digest: str) -> bytes:
        row = conn.execute("SELECT z, data FROM st_blobs WHERE h=?",
                           (bytes.fromhex(digest),)).fetchone()
        if row is None:
            raise CodecError(f"blob {digest[:12]} is missing")
        return codec.unpack_blob(row[0], row[1])

    return walk_chain(sid, head, rows, lambda refs: _blob_problem(conn, refs, checked), fetch,
                      first, parent)


def _envelope_problem(decoder: ChainDecoder, extra: bytes,
                      fetch: Callable[[str], bytes] | None) -> tuple[str, str] | None:
    """What is wrong with the references of stored ``extra`` (state/envref.py) to the
    state ``decoder`` holds: one that does not resolve, or canonical bytes that are not
    the ones the row's digest (and so its hash) names."""
    if fetch is None:
        return "UNDECODABLE", "the envelope references the state; this store never writes that"

    def values(name: str) -> Any:
        at = _INDEX.get(name)
        if at is None:
            raise CodecError(f"envelope reference names no state field {name!r}")
        return codec.resolve(decoder.enc[at], fetch)

    try:
        if envref.digest_matches(extra, values):
            return None
    except (ValueError, TypeError) as exc:  # CodecError and JSONDecodeError included
        return "UNDECODABLE", f"envelope: {exc}"
    return "HASH_MISMATCH", "the envelope's references do not give the bytes its digest names"


def walk_chain(sid: str, head: int, rows: list[Row],
               blob_problem: Callable[[list[tuple[str, str]]], tuple[str, str] | None],
               fetch: Callable[[str], bytes] | None = None, first: int = 0,
               parent: bytes = codec.GENESIS) -> ChainCheck:
    """The chain check of every backend over its rows; ``blob_problem(refs)`` says what
    is wrong with the blobs a row references (``None``: nothing); ``fetch`` (a blob's
    bytes) resolves envelope references to the state, which only SQLite writes. ``first``
    and ``parent``: where the rows start and the hash they chain onto (a segment of a fork
    that shares its parent's rows, state/sqlite/shares.py)."""
    decoder = ChainDecoder(sid)
    decoder.advance(parent)

    def broken(rev: int | None, problem: str, detail: str) -> ChainCheck:
        return ChainCheck(sid=sid, revisions=len(rows), rev=rev, problem=problem, detail=detail)

    if not rows:
        return broken(0, "REV_GAP", "the session has no revisions")
    # A long sid is stored as a blob reference (a fork re-stamps it verbatim): either form.
    stamped = (sid, codec.externalize(sid, {}))
    snapshots: dict[int, bytes] = {}  # the bodies a based row may name
    for expected, row in enumerate(rows, first):
        rev, parent_rev, kind, _fsm, _skill, _ts, body, extra, stored = row
        if rev != expected:
            return broken(expected, "REV_GAP", f"revision {expected} is missing (next is {rev})")
        if parent_rev != (None if rev == 0 else rev - 1):
            return broken(rev, "MISSING_PARENT", f"parent_rev is {parent_rev}")
        try:
            decoder.feed(kind, body)
            extra_value = envref.parse(extra)
        except (ValueError, TypeError) as exc:  # CodecError and JSONDecodeError included
            return broken(rev, "UNDECODABLE", str(exc))
        if decoder.enc[_SID_INDEX] not in stamped:
            return broken(rev, "SID_MISMATCH", "state is stamped with another sid")
        refs = [r for i in decoder.changed for r in codec.iter_refs(decoder.enc[i])]
        refs.extend(codec.iter_refs(extra_value))
        blob = blob_problem(refs)
        if blob is None and envref.is_referenced(extra):
            blob = _envelope_problem(decoder, extra, fetch)
        if blob is not None:
            return broken(rev, *blob)
        digest = decoder.hash_of(row)
        if digest != stored:
            return broken(rev, "HASH_MISMATCH", "stored hash differs from the recomputed one")
        # A sound row whose mark names a snapshot: a cold read takes it from there.
        if kind == SNAPSHOT:
            snapshots[rev] = body
        elif type(kind) is int and kind >= BASED and not _based_holds(
                sid, snapshots.get(rev + 1 - kind), body, decoder.ebytes):
            return broken(rev, "UNDECODABLE", f"row kind {kind}: its ops do not turn the"
                          f" snapshot at revision {rev + 1 - kind} into this revision")
        decoder.advance(digest)
    if head != first + len(rows) - 1:
        last = first + len(rows) - 1
        return broken(head, "HEAD_MISMATCH", f"head is {head} but the last revision is {last}")
    return ChainCheck(sid=sid, revisions=len(rows))


def _based_holds(sid: str, snapshot: bytes | None, body: bytes, ebytes: list[bytes]) -> bool:
    """Whether a based row's ops applied to the snapshot it names give the fields the
    chain gives (``ebytes``), as a cold read takes them; a row that names no snapshot is
    read through the chain, so its mark is inert."""
    if snapshot is None:
        return True
    check = ChainDecoder(sid)
    try:
        check.feed(SNAPSHOT, snapshot)
        check.feed(DELTA, body)
    except (ValueError, TypeError):
        return False
    return check.ebytes == ebytes


def _identity(value: object) -> object:
    return value


def _reencode(rows: list[Row], sid: str, snapshot_every: int) -> list[tuple[int, bytes]] | None:
    """``(kind, body)`` for every row under the snapshot policy, or ``None`` if the chain
    does not verify (then nothing may be rewritten).
    """
    decoder = ChainDecoder(sid)
    prev_enc: list[object] = []
    prev_bytes: list[bytes] = []
    out: list[tuple[int, bytes]] = []
    since: set[str] = set()  # the fields with an op since the snapshot, as a commit tracks
    at = 0  # that snapshot's revision
    for row in rows:
        try:
            decoder.feed(row[2], row[6])
        except (ValueError, TypeError):
            return None
        digest = decoder.hash_of(row)
        if digest != row[8]:
            return None
        decoder.advance(digest)
        if row[0] % snapshot_every == 0:
            out.append((SNAPSHOT, codec.snapshot_body(decoder.ebytes)))
            since.clear()
            at = row[0]
        else:
            ops = {}
            for i, name in enumerate(STATE_FIELDS):
                now = decoder.ebytes[i]
                if now == prev_bytes[i]:
                    continue
                if type(decoder.enc[i]) is dict and codec.verbatim(name, now):
                    # The op a commit writes for a small dict, so fresh rows stay as they are.
                    ops[name] = small_op(decoder.enc[i], now, prev_enc[i], prev_bytes[i], name)
                else:
                    _, ops[name] = codec.diff_value(
                        decoder.enc[i], prev_enc[i], prev_enc[i], _identity, _identity
                    )
            # Marked as encode_revision marks it: when every field changed since the
            # snapshot is set whole again, the ops apply to the snapshot too.
            based = all(name in ops and ops[name][0] == codec.OP_SET for name in since)
            since.update(ops)
            out.append((BASED - 1 + row[0] - at if based else DELTA, orjson.dumps(ops)))
        prev_enc, prev_bytes = list(decoder.enc), list(decoder.ebytes)
    return out


def compact_rows(
    conn: sqlite3.Connection, session: int, sid: str, snapshot_every: int
) -> int | None:
    """Rewrite one session's rows under the snapshot policy (inside the caller's write
    transaction). Returns the number of rows rewritten, or ``None`` when the chain does
    not verify before, or would not decode to the same bytes after (nothing written).
    """
    rows = read_rows(conn, session)
    fresh = _reencode(rows, sid, snapshot_every)
    if fresh is None:
        return None
    # Never break a chain: the rewritten rows must decode to the very same fields.
    check, again = ChainDecoder(sid), ChainDecoder(sid)
    for row, (kind, body) in zip(rows, fresh, strict=True):
        check.feed(row[2], row[6])
        try:
            again.feed(kind, body)
        except (ValueError, TypeError):
            return None
        if again.ebytes != check.ebytes:
            return None
    changed = [
        (kind, body, (session << 32) + row[0])
        for row, (kind, body) in zip(rows, fresh, strict=True)
        if (kind, body) != (row[2], bytes(row[6]))
    ]
    conn.executemany("UPDATE st_revisions SET kind=?, body=? WHERE k=?",
                     [(kind, codec.pack_row(body, snapshot=kind == SNAPSHOT), k)
                      for kind, body, k in changed])
    return len(changed)


def prune_blobs(conn: sqlite3.Connection) -> int:
    """Delete blobs no row references (inside the caller's write transaction)."""
    live: set[str] = set()
    pending: set[tuple[str, str]] = set()
    for body, extra in conn.execute("SELECT body, extra FROM st_revisions"):
        pending |= codec.ref_digests(codec.unpack_row(body))
        pending |= codec.ref_digests(codec.unpack_row(extra))
    while pending:
        tag, digest = pending.pop()
        if digest in live:
            continue
        live.add(digest)
        if tag == "J":
            row = conn.execute(
                "SELECT z, data FROM st_blobs WHERE h=?", (bytes.fromhex(digest),)
            ).fetchone()
            if row is not None:
                pending |= codec.ref_digests(codec.unpack_blob(row[0], row[1]))
    dead = [
        (h,) for (h,) in conn.execute("SELECT h FROM st_blobs").fetchall()
        if bytes(h).hex() not in live
    ]
    conn.executemany("DELETE FROM st_blobs WHERE h=?", dead)
    return len(dead)
