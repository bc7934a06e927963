"""Chain verification and blob pruning for the PostgreSQL rows.

The walk is the SQLite backend's (:class:`claimfsm.state.sqlite.decode.ChainDecoder` recomputes
every hash); only the blob look-up differs, so it is passed in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import psycopg

from claimfsm.state import codec
from claimfsm.state.codec import CodecError
from claimfsm.state.sqlite.maintenance import walk_chain
from claimfsm.state.sqlite.rows import Row
from claimfsm.state.store import ChainCheck

__all__ = ["BlobLookup", "prune_blobs", "verify_rows"]

#: digest (hex) -> the stored ``(z, data)``, or ``None`` when there is no such blob.
BlobLookup = Callable[[str], "tuple[int, bytes] | None"]


def _blob_problem(
    lookup: BlobLookup, refs: Iterable[tuple[str, str]], checked: set[str]
) -> tuple[str, str] | None:
    """The first missing or corrupt blob among ``refs`` (following page blobs' own refs)."""
    pending = list(refs)
    while pending:
        tag, digest = pending.pop()
        if digest in checked:
            continue
        stored = lookup(digest)
        if stored is None:
            return "MISSING_BLOB", f"blob {digest[:12]} is missing"
        try:
            raw = codec.unpack_blob(*stored)
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
    sid: str, head: int, rows: list[Row], lookup: BlobLookup, checked: set[str]
) -> ChainCheck:
    """Walk a session's rows and report the first broken link (codes as in fsck)."""
    return walk_chain(sid, head, rows, lambda refs: _blob_problem(lookup, refs, checked))


def prune_blobs(conn: psycopg.Connection[Any]) -> int:
    """Delete blobs no row references (inside the caller's transaction, which first
    locks the blob table against concurrent commits adding references)."""
    conn.execute("LOCK TABLE st_blobs IN SHARE ROW EXCLUSIVE MODE")
    live: set[str] = set()
    pending: set[tuple[str, str]] = set()
    for body, extra in conn.execute("SELECT body, extra FROM st_revisions"):
        pending |= codec.ref_digests(codec.unpack_row(bytes(body)))
        pending |= codec.ref_digests(codec.unpack_row(bytes(extra)))
    while pending:
        tag, digest = pending.pop()
        if digest in live:
            continue
        live.add(digest)
        if tag == "J":
            row = conn.execute("SELECT z, data FROM st_blobs WHERE h = %s",
                               (bytes.fromhex(digest),)).fetchone()
            if row is not None:
                pending |= codec.ref_digests(codec.unpack_blob(row[0], bytes(row[1])))
    dead = [(h,) for (h,) in conn.execute("SELECT h FROM st_blobs").fetchall()
            if bytes(h).hex() not in live]
    with conn.cursor() as cur:
        cur.executemany("DELETE FROM st_blobs WHERE h = %s", dead)
    return len(dead)
