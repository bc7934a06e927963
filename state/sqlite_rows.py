"""Revisions to SQLite rows: the encoder, the cache entry, trusted model building, the LRU.

A row is ``(rev, parent_rev, kind, fsm, skill, ts, body, extra, hash)``. ``body`` is a
full snapshot of the encoded state (``kind`` 0) or the field ops against the parent
(``kind`` 1); ``extra`` is the encoded ``[envelope, events]``.
"""

from __future__ import annotations

import operator
import threading
import typing
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from state import codec
from state.codec import STATE_FIELDS
from state.model import Revision, SessionState

__all__ = [
    "DELTA",
    "INDEX",
    "SNAPSHOT",
    "Encoded",
    "Entry",
    "Lru",
    "Row",
    "encode_revision",
    "inflate",
    "packed",
    "state_from",
    "trusted",
]

SNAPSHOT, DELTA = 0, 1
Row = tuple[int, int | None, int, str, str | None, str, bytes, bytes, bytes]
INDEX = {name: i for i, name in enumerate(STATE_FIELDS)}
_JSON_SCALARS = (str, int, float, bool, type(None))
_setattr = object.__setattr__
M = TypeVar("M", bound=BaseModel)


def _nested_models(cls: type[BaseModel]) -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for name, info in cls.model_fields.items():
        for option in typing.get_args(info.annotation) or (info.annotation,):
            if isinstance(option, type) and issubclass(option, BaseModel):
                found[name] = option
    return found


_NESTED = _nested_models(SessionState)


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """Build a model from values this store wrote itself: no validation (hot read path).

    ``values`` must hold every field, already of the right types (nested models are
    converted here for the session state's own nested fields).
    """
    obj = cls.__new__(cls)
    _setattr(obj, "__dict__", values)
    _setattr(obj, "__pydantic_fields_set__", set(values))
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


def state_from(values: dict[str, Any]) -> SessionState:
    """A session state from plain field values (nested models built here)."""
    for name, model in _NESTED.items():
        value = values[name]
        if type(value) is dict:
            values[name] = trusted(model, dict(value))
    return trusted(SessionState, values)


@dataclass(slots=True)
class Entry:
    """A decoded revision plus what the next commit needs: its hash and field bytes."""

    revision: Revision
    hash: bytes
    ebytes: tuple[bytes, ...]
    _digests: tuple[bytes, ...] | None = None

    def digests(self) -> tuple[bytes, ...]:
        """Per-field digests (computed once, on first need)."""
        if self._digests is None:
            self._digests = tuple(
                codec.field_digest(n, b) for n, b in zip(STATE_FIELDS, self.ebytes, strict=True)
            )
        return self._digests


@dataclass(slots=True)
class Encoded:
    """One revision ready to insert: the row, the blobs it introduced, its cache entry."""

    row: Row
    blobs: codec.Sink
    entry: Entry


def _extra(revision: Revision, sink: codec.Sink) -> bytes:
    if revision.envelope is None and not revision.events:
        return b"[null,[]]"
    raw = orjson.dumps([revision.envelope, revision.events])
    if codec.verbatim("", raw):
        return raw
    return orjson.dumps(codec.externalize_extra(revision.envelope, revision.events, sink))


def _appended(child: Any, parent: Any) -> bool:
    if type(child) is not list or type(parent) is not list or not 0 < len(parent) < len(child):
        return False
    prefix = child[: len(parent)]
    # Items shared with the parent (model_copy) are unchanged by definition; else compare.
    return all(map(operator.is_, prefix, parent)) or codec.same(prefix, parent)


def encode_revision(revision: Revision, parent: Entry | None, snapshot_every: int) -> Encoded:
    """Encode ``revision``: a snapshot at revision 0 and every ``snapshot_every``
    revisions, otherwise only the fields that differ from ``parent``.

    Unchanged fields are found by identity first (``model_copy`` shares them), then
    equality; only changed fields are dumped, encoded and hashed.
    """
    state = revision.state
    values = state.__dict__
    sink: codec.Sink = {}
    if parent is None:
        changed = list(STATE_FIELDS)
        ebytes = [b""] * len(STATE_FIELDS)
        digests = [b""] * len(STATE_FIELDS)
        before: dict[str, Any] = {}
    else:
        before = parent.revision.state.__dict__
        changed = [n for n in STATE_FIELDS
                   if values[n] is not before[n] and not codec.same(values[n], before[n])]
        ebytes = list(parent.ebytes)
        digests = list(parent.digests())
    ops: dict[str, list[Any]] = {}
    if parent is not None:
        # Lists that only grew at the end (steps, tool results): encode just the tail.
        for name in [n for n in changed if _appended(values[n], before[n])]:
            i = INDEX[name]
            item, _ = codec.externalize_field(name, sink)
            tail = [item(v) for v in to_jsonable_python(values[name][len(before[name]):])]
            ebytes[i] = codec.splice_append(ebytes[i], orjson.dumps(tail))
            digests[i] = codec.field_digest(name, ebytes[i])
            ops[name] = [codec.OP_APPEND, tail]
            changed.remove(name)
    for name in changed:
        i = INDEX[name]
        child = values[name]
        if type(child) not in _JSON_SCALARS:
            child = to_jsonable_python(child)
        raw = orjson.dumps(child)
        if codec.verbatim(name, raw):
            # Small and plain (the common step): the value is its own encoded form.
            ops[name] = [codec.OP_SET, child]
            ebytes[i] = raw
        else:
            item, whole = codec.externalize_field(name, sink)
            if parent is not None and type(child) in (dict, list):
                enc, op = codec.diff_value(
                    child, before[name], orjson.loads(ebytes[i]), item, whole
                )
            else:
                enc = whole(child)
                op = [codec.OP_SET, enc]
            ops[name] = op
            ebytes[i] = orjson.dumps(enc)
        digests[i] = codec.field_digest(name, ebytes[i])
    snapshot = parent is None or revision.rev % snapshot_every == 0
    body = codec.snapshot_body(ebytes) if snapshot else orjson.dumps(ops)
    extra = _extra(revision, sink)
    header = codec.header_bytes(
        revision.sid, revision.rev, revision.parent_rev, revision.fsm, revision.skill, revision.ts
    )
    digest = codec.revision_hash(
        codec.GENESIS if parent is None else parent.hash, header, extra, digests
    )
    row: Row = (
        revision.rev, revision.parent_rev, SNAPSHOT if snapshot else DELTA,
        revision.fsm, revision.skill, revision.ts, body, extra, digest,
    )
    entry = Entry(revision, digest, tuple(ebytes), tuple(digests))
    return Encoded(row, sink, entry)


def packed(row: Row) -> tuple[Any, ...]:
    """INSERT parameters of ``row`` after its key: ``body`` and ``extra`` packed."""
    return (*row[1:6], codec.pack_row(row[6]), codec.pack_row(row[7]), row[8])


def inflate(rows: list[Row]) -> list[Row]:
    """Rows as read from the file with ``body`` and ``extra`` in canonical form."""
    out = rows
    for i, row in enumerate(rows):
        if row[6][:1] == b"x" or row[7][:1] == b"x":
            if out is rows:
                out = list(rows)
            out[i] = (*row[:6], codec.unpack_row(row[6]), codec.unpack_row(row[7]), row[8])
    return out


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A small thread-safe LRU map bounded by entry count."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value, marked recently used; ``None`` if absent."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Insert or refresh, evicting the least recently used beyond the bound."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def peek(self, key: K) -> V | None:
        """The value without marking it used (a dict read: no lock needed)."""
        return self._data.get(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._data.clear()
