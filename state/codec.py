"""The storage encoding of revisions: blobs, field deltas, canonical bytes and hashes.

Pure functions (values and bytes in, values and bytes out), shared by the SQLite
backend and its maintenance tools (fsck, compact, fork), so there is one definition of
the format. This module holds the reading side (references, field ops, snapshots) and
re-exports the write side (:mod:`claimfsm.state.encode`) and the bytes and hashes
(:mod:`claimfsm.state.codec_bytes`), so every name is importable from here.

The *encoded form* ("enc") of a state is the JSON of ``SessionState.model_dump(
mode="json")`` with large values moved out to content-addressed blobs:

- a string of :data:`BLOB_MIN` UTF-8 bytes or more becomes ``"\\x00B" + sha256-hex``
  (the blob holds its UTF-8 bytes);
- every entry of the ``pages`` field becomes ``"\\x00J" + sha256-hex`` (the blob holds the
  entry's own encoded JSON, so a page text it shares with evidence is stored once);
- a genuine string that starts with NUL is escaped as ``"\\x00E" + s``.

The encoded form is a deterministic function of the state, so it is what gets hashed:
blobs are covered by their sha256 names (a Merkle link), and storage layout (snapshot or
delta) never changes a hash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from claimfsm.state.codec_bytes import (
    FORMAT,
    GENESIS,
    CodecError,
    field_digest,
    header_bytes,
    pack_blob,
    pack_row,
    revision_hash,
    splice_append,
    unpack_blob,
    unpack_row,
)
from claimfsm.state.encode import (
    _ESC,
    _NUL_JSON,
    _REF_JSON,
    _REF_STR,
    BLOB_MIN,
    OP_APPEND,
    OP_SET,
    OP_UPDATE,
    PAGE_FIELD,
    diff_value,
    externalize,
    externalize_extra,
    externalize_field,
    same,
    verbatim,
)
from claimfsm.state.encode import Sink as Sink
from claimfsm.state.model import SessionState

__all__ = [
    "BLOB_MIN",
    "FORMAT",
    "GENESIS",
    "OP_APPEND",
    "OP_SET",
    "OP_UPDATE",
    "PAGE_FIELD",
    "STATE_FIELDS",
    "CodecError",
    "apply_op",
    "diff_value",
    "externalize",
    "externalize_extra",
    "externalize_field",
    "field_digest",
    "has_refs",
    "header_bytes",
    "iter_refs",
    "pack_blob",
    "pack_row",
    "ref_digests",
    "resolve",
    "revision_hash",
    "same",
    "snapshot_body",
    "snapshot_values",
    "splice_append",
    "unpack_blob",
    "unpack_row",
    "verbatim",
]

STATE_FIELDS: tuple[str, ...] = tuple(SessionState.model_fields)
_FIELD_LIST = list(STATE_FIELDS)

# Raw-bytes form of a reference inside stored JSON; used to find references without
# parsing (over-matching is harmless: it can only keep a blob alive).
_REF_RE = re.compile(rb"\\u0000([BJ])([0-9a-f]{64})")


def resolve(value: Any, fetch: Callable[[str], bytes]) -> Any:
    """Encoded ``value`` back to plain JSON; ``fetch(hex)`` returns a blob's raw bytes."""
    kind = type(value)
    if kind is str:
        if value[:1] != "\x00":
            return value
        tag, rest = value[:2], value[2:]
        if tag == _ESC:
            return rest
        if tag == _REF_STR:
            return fetch(rest).decode()
        if tag == _REF_JSON:
            raw = fetch(rest)
            parsed = orjson.loads(raw)
            # No \u0000 in the text: no string in it is NUL-led, so nothing is left to
            # resolve (walking a list of 24 evidence strings cost more than parsing it).
            return parsed if raw.find(_NUL_JSON) < 0 else resolve(parsed, fetch)
        raise CodecError(f"unknown reference tag {tag!r}")
    if kind is dict:
        return {k: resolve(v, fetch) for k, v in value.items()}
    if kind is list:
        return [resolve(v, fetch) for v in value]
    return value


def has_refs(encoded: bytes) -> bool:
    """Whether encoded JSON bytes may hold a reference or an escape (cheap pre-check)."""
    return _NUL_JSON in encoded


def iter_refs(value: Any) -> Iterable[tuple[str, str]]:
    """Every ``(tag, hex)`` blob reference inside an encoded value (tag ``B`` or ``J``)."""
    kind = type(value)
    if kind is str:
        if value[:2] in (_REF_STR, _REF_JSON):
            yield value[1], value[2:]
    elif kind is dict:
        for v in value.values():
            yield from iter_refs(v)
    elif kind is list:
        for v in value:
            yield from iter_refs(v)


def ref_digests(raw: bytes) -> set[tuple[str, str]]:
    """``(tag, hex)`` references found by scanning stored JSON bytes (may over-match)."""
    return {(m.group(1).decode(), m.group(2).decode()) for m in _REF_RE.finditer(raw)}


def apply_op(parent_enc: Any, op: Any) -> Any:
    """The encoded value after applying one stored field ``op`` to ``parent_enc``."""
    if type(op) is not list or not op:
        raise CodecError(f"malformed field op {op!r:.80}")
    code = op[0]
    if code == OP_SET and len(op) == 2:
        return op[1]
    if code == OP_APPEND and len(op) == 2 and type(parent_enc) is list and type(op[1]) is list:
        return parent_enc + op[1]
    if (code == OP_UPDATE and len(op) == 3 and type(parent_enc) is dict and type(op[1]) is dict
            and type(op[2]) is list):
        if op[2]:
            dropped = set(op[2])
            out = {k: v for k, v in parent_enc.items() if k not in dropped}
        else:
            out = dict(parent_enc)
        out.update(op[1])
        return out
    raise CodecError(f"field op {op!r:.80} does not apply to its parent value")


def snapshot_body(ebytes: Sequence[bytes]) -> bytes:
    """A full snapshot row body: the encoded bytes of every state field, in field order,
    as one JSON array. (Schema 2 wrote an object keyed by field name; readers take both,
    see :func:`snapshot_values`. Without the names a small state's snapshot is about half
    as long, short enough to store unpacked: nothing to inflate on a cold read.)
    """
    return b"[" + b",".join(ebytes) + b"]"


def snapshot_values(parsed: Any) -> list[Any]:
    """The encoded field values of a parsed snapshot body, in field order, from either
    form (array, or schema 2's object); :class:`CodecError` if it is neither."""
    if type(parsed) is list and len(parsed) == len(STATE_FIELDS):
        return parsed
    if type(parsed) is dict and list(parsed) == _FIELD_LIST:
        return list(parsed.values())
    raise CodecError("snapshot does not hold exactly the state fields")
