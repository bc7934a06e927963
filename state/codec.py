"""The storage encoding of revisions: blobs, field deltas, canonical bytes and hashes.

Pure functions (values and bytes in, values and bytes out), shared by the SQLite
backend and its maintenance tools (fsck, compact, fork), so there is one definition of
the format.

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

import hashlib
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

BLOB_MIN = 256
"""Strings of at least this many UTF-8 bytes are stored as blobs."""

PAGE_FIELD = "pages"
STATE_FIELDS: tuple[str, ...] = tuple(SessionState.model_fields)
_FIELD_LIST = list(STATE_FIELDS)

OP_SET, OP_APPEND, OP_UPDATE = 0, 1, 2

_NESTED_MIN = 1024
_REF_STR, _REF_JSON, _ESC = "\x00B", "\x00J", "\x00E"
_NUL_JSON = b"\\u0000"
# The scalar types a flat container may hold for _plain_blob.
_SCALARS = frozenset({str, int, float, bool, type(None)})
# Raw-bytes form of a reference inside stored JSON; used to find references without
# parsing (over-matching is harmless: it can only keep a blob alive).
_REF_RE = re.compile(rb"\\u0000([BJ])([0-9a-f]{64})")

Sink = dict[str, bytes]
"""New blobs found while encoding: sha256 hex -> raw bytes."""


def _blob_ref(tag: str, raw: bytes, sink: Sink) -> str:
    digest = hashlib.sha256(raw).hexdigest()
    sink[digest] = raw
    return tag + digest


def _externalize_str(value: str, sink: Sink) -> str:
    size = len(value)
    # A string of n characters has n..4n UTF-8 bytes: encode only when in doubt.
    if size >= BLOB_MIN or (size * 4 >= BLOB_MIN and len(value.encode()) >= BLOB_MIN):
        return _blob_ref(_REF_STR, value.encode(), sink)
    if size and value[0] == "\x00":
        return _ESC + value
    return value


def externalize(value: Any, sink: Sink) -> Any:
    """``value`` (JSON-shaped) in encoded form; new blobs are added to ``sink``."""
    kind = type(value)
    if kind is str:
        return _externalize_str(value, sink)
    if kind is dict:
        return {k: externalize(v, sink) for k, v in value.items()}
    if kind is list:
        return [externalize(v, sink) for v in value]
    # Subclasses (StrEnum values, tuples from hand-built dicts) take the slow path.
    if isinstance(value, str):
        return _externalize_str(str(value), sink)
    if isinstance(value, dict):
        return {k: externalize(v, sink) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [externalize(v, sink) for v in value]
    return value


def _page_ref(entry: Any, sink: Sink) -> str:
    return _blob_ref(_REF_JSON, orjson.dumps(externalize(entry, sink)), sink)


def externalize_field(name: str, sink: Sink) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """The encoders for field ``name``: one for an item (dict value or list element) and
    one for the whole field value.
    """
    if name == PAGE_FIELD:

        def page_item(entry: Any) -> Any:
            return _page_ref(entry, sink)

        def page_all(value: Any) -> Any:
            if type(value) is dict:
                return {k: _page_ref(v, sink) for k, v in value.items()}
            return externalize(value, sink)

        return page_item, page_all

    def item(value: Any) -> Any:
        return _shared(value, sink)

    def whole(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            if _flat(value):  # each value is its own encoding: no call an item
                return dict(value)
            return {k: item(v) for k, v in value.items()}
        if kind is list:
            if _flat(value):
                return list(value)
            return [item(v) for v in value]
        return externalize(value, sink)

    return item, whole


def _flat(value: dict[str, Any] | list[Any]) -> bool:
    """Whether every item of ``value`` is its own encoded form, so that encoding it is a
    copy: 8 or more items (fewer are as cheap to walk as to look at), all scalars, no
    string of 64 characters or more (a character is at most 4 UTF-8 bytes, so none can
    become a blob) and none holding a NUL (only a NUL-led one is escaped; any NUL sends
    the value to the walk, which is always right)."""
    if len(value) < 8:
        return False
    items = value.values() if type(value) is dict else value
    kinds = set(map(type, items))
    if not kinds <= _SCALARS:
        return False
    if str in kinds:
        strings = items if len(kinds) == 1 else [v for v in items if type(v) is str]
        if max(map(len, strings)) >= 64 or "\x00" in "".join(strings):
            return False
    return True


def _shared(value: Any, sink: Sink, least: int = BLOB_MIN) -> Any:
    # Every list or dict whose encoded JSON is large becomes a blob, so the same
    # evidence list, tool result or search hits are stored once wherever they appear
    # (in the state, in the envelope that produced them, in another session). Nested
    # containers must be larger: many small blobs would cost more in references than
    # their sharing saves.
    kind = type(value)
    if (kind is dict or kind is list) and _flat(value):
        # A growing log, a list of short strings: serialised at once instead of three
        # Python calls an item (the walk below gives the same bytes).
        raw = orjson.dumps(value)
        if len(raw) >= least:
            return _blob_ref(_REF_JSON, raw, sink)
        return dict(value) if kind is dict else list(value)
    if kind is dict:
        enc: Any = {k: _shared(v, sink, _NESTED_MIN) for k, v in value.items()}
    elif kind is list:
        enc = [_shared(v, sink, _NESTED_MIN) for v in value]
    else:
        return externalize(value, sink)
    raw = orjson.dumps(enc)
    if len(raw) >= least:
        return _blob_ref(_REF_JSON, raw, sink)
    return enc


def externalize_extra(envelope: Any, events: Any, sink: Sink) -> Any:
    """The encoded ``[envelope, events]`` of a revision: each value of the envelope's
    ``d`` and the events list are encoded like state fields (large items as blobs).
    """
    _, whole = externalize_field("", sink)
    if type(envelope) is dict and type(envelope.get("d")) is dict:
        env = {k: ({dk: whole(dv) for dk, dv in v.items()} if k == "d" else externalize(v, sink))
               for k, v in envelope.items()}
    else:
        env = externalize(envelope, sink)
    return [env, whole(events)]


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


def verbatim(name: str, raw: bytes) -> bool:
    """Whether a plain value of field ``name`` whose JSON is ``raw`` is already in
    encoded form: too small to hold a blob-sized string or item, no NUL-led string to
    escape, and not a non-empty ``pages`` (whose entries are always blobs).
    """
    return len(raw) < BLOB_MIN and _NUL_JSON not in raw and (name != PAGE_FIELD or raw == b"{}")


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


def same(a: Any, b: Any) -> bool:
    """Equal *as stored*: ``==`` ignores dict key order and says ``1 == 1.0 == True``,
    but key order and JSON types are data here, so equal values are also compared as
    JSON bytes (only when not the very same object).
    """
    if a is b:
        return True
    if a != b:
        return False
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return False


def diff_value(
    child: Any,
    parent: Any,
    parent_enc: Any,
    item: Callable[[Any], Any],
    whole: Callable[[Any], Any],
) -> tuple[Any, list[Any]]:
    """Encode ``child`` against ``parent`` (plain) whose encoded form is ``parent_enc``.

    Returns ``(child_enc, op)``: ``[OP_APPEND, tail]`` when a list grew at its end,
    ``[OP_UPDATE, changed, deleted]`` when a dict changed some keys (key order kept),
    otherwise ``[OP_SET, value]``. Unchanged parts reuse ``parent_enc``, so only what
    changed is encoded (and hashed).
    """
    if type(child) is dict and type(parent) is dict and type(parent_enc) is dict and parent:
        kept = [k for k in parent if k in child]
        if list(child)[: len(kept)] == kept and parent_enc.keys() == parent.keys():
            enc: dict[str, Any] = {}
            changed: dict[str, Any] = {}
            for k, v in child.items():
                if k in parent and same(parent[k], v):
                    enc[k] = parent_enc[k]
                else:
                    enc[k] = changed[k] = item(v)
            if len(changed) < len(child):
                return enc, [OP_UPDATE, changed, [k for k in parent if k not in child]]
            return enc, [OP_SET, enc]
    if type(child) is list and type(parent) is list and type(parent_enc) is list:
        n = len(parent)
        if 0 < n <= len(child) and len(parent_enc) == n and same(child[:n], parent):
            tail = [item(v) for v in child[n:]]
            return parent_enc + tail, [OP_APPEND, tail]
    value = whole(child)
    return value, [OP_SET, value]


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
