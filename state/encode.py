"""The write side of the encoded form: a plain value in, its encoded form out, with the
large values it holds moved out to blobs (whole values, items, and a field's delta
against its parent value).

It is its own module because encoding is one job, the one a commit (and a compaction)
runs, apart from reading the form back: the reference markers it writes, the blob
thresholds and the field-op codes are defined here, and :mod:`claimfsm.state.codec`
(which describes the format, reads it back and re-exports every name below) takes them
from here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

__all__ = [
    "BLOB_MIN",
    "OP_APPEND",
    "OP_SET",
    "OP_UPDATE",
    "PAGE_FIELD",
    "Sink",
    "diff_value",
    "externalize",
    "externalize_extra",
    "externalize_field",
    "same",
    "verbatim",
]

BLOB_MIN = 256
"""Strings of at least this many UTF-8 bytes are stored as blobs."""

PAGE_FIELD = "pages"

OP_SET, OP_APPEND, OP_UPDATE = 0, 1, 2

_NESTED_MIN = 1024
_REF_STR, _REF_JSON, _ESC = "\x00B", "\x00J", "\x00E"
_NUL_JSON = b"\\u0000"
# The scalar types a flat container may hold for _plain_blob.
_SCALARS = frozenset({str, int, float, bool, type(None)})

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


def verbatim(name: str, raw: bytes) -> bool:
    """Whether a plain value of field ``name`` whose JSON is ``raw`` is already in
    encoded form: too small to hold a blob-sized string or item, no NUL-led string to
    escape, and not a non-empty ``pages`` (whose entries are always blobs).
    """
    return len(raw) < BLOB_MIN and _NUL_JSON not in raw and (name != PAGE_FIELD or raw == b"{}")

