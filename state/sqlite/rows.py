"""Revisions to SQLite rows: the encoder (each changed field by
:mod:`claimfsm.state.sqlite.fields`), the cache entry and trusted model building.

A row is ``(rev, parent_rev, kind, fsm, skill, ts, body, extra, hash)``. ``body`` is a
full snapshot of the encoded state (``kind`` 0) or the field ops against the parent
(``kind`` 1, or ``kind`` ``1 + d`` when the same ops also turn the snapshot ``d`` revisions
below into this revision: see :func:`encode_revision`); ``extra`` is the encoded
``[envelope, events]``, in schema 6 possibly with envelope values stored as references to
the state (:mod:`claimfsm.state.envref`).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

from claimfsm.state import codec
from claimfsm.state.codec import STATE_FIELDS, CodecError
from claimfsm.state.model import Revision, SessionState, builder, trusted
from claimfsm.state.sqlite.db import CorruptStore
from claimfsm.state.sqlite.fields import encode_field, stored_extra
from claimfsm.state.sqlite.stamp import pack_ts, ts_text

__all__ = [
    "BASED",
    "DELTA",
    "INDEX",
    "SNAPSHOT",
    "Encoded",
    "Entry",
    "Row",
    "Since",
    "bind_ts",
    "bound",
    "builder",
    "encode_revision",
    "inflate",
    "packed",
    "state_from",
    "trusted",
]

SNAPSHOT, DELTA, BASED = 0, 1, 2
OP_SET = codec.OP_SET
# A delta whose ops also apply to the snapshot ``d`` revisions below it is stored with
# kind ``DELTA + d`` (so at least ``BASED``): the reader finds that snapshot by key.
Since = tuple[int, frozenset[str]]
Row = tuple[int, int | None, int, str, str | None, str, bytes, bytes, bytes]
INDEX = {name: i for i, name in enumerate(STATE_FIELDS)}
# The "parent" of revision 0: every field's prior value is null (never looked at).
_NO_PARENT: dict[str, Any] = dict.fromkeys(STATE_FIELDS)


def _nested_models(cls: type[BaseModel]) -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for name, info in cls.model_fields.items():
        for option in typing.get_args(info.annotation) or (info.annotation,):
            if isinstance(option, type) and issubclass(option, BaseModel):
                found[name] = option
    return found


_NESTED = _nested_models(SessionState)


_NESTED_BUILT = tuple((name, builder(model)) for name, model in _NESTED.items())
_state = builder(SessionState)


def state_from(values: dict[str, Any]) -> SessionState:
    """A session state from plain field values (nested models built here)."""
    for name, build in _NESTED_BUILT:
        value = values[name]
        if type(value) is dict:
            values[name] = build(dict(value))
    return _state(values)


class Entry:
    """A decoded revision plus what the next commit needs: its hash and field bytes.

    The field bytes are computed on first need from the encoded values (``enc``) and the
    bytes already known (``known``, ``None`` where not), so a read that is never followed
    by a commit or a chain walk does not serialise the whole state again.
    """

    __slots__ = ("_digests", "_ebytes", "_enc", "_known", "hash", "revision", "since")

    def __init__(
        self,
        revision: Revision,
        hash: bytes,
        ebytes: tuple[bytes, ...] | None = None,
        digests: tuple[bytes, ...] | None = None,
        enc: tuple[Any, ...] = (),
        known: tuple[bytes | None, ...] = (),
        since: Since | None = None,
    ) -> None:
        self.revision = revision
        self.hash = hash
        # A snapshot's revision at or below this one and the fields with an op in some
        # row since it (``None``: not known, as after most chain walks): what decides
        # whether the next row may be based on that snapshot.
        self.since = since
        self._ebytes = ebytes
        self._digests = digests
        self._enc = enc
        self._known = known

    @property
    def ebytes(self) -> tuple[bytes, ...]:
        """Encoded bytes of every state field, in field order."""
        out = self._ebytes
        if out is None:
            dumps = orjson.dumps
            if self._known:
                out = tuple(b if b is not None else dumps(v)
                            for b, v in zip(self._known, self._enc, strict=True))
            else:
                out = tuple(map(dumps, self._enc))
            # ``enc`` is kept: another thread may be computing the same bytes from it.
            self._ebytes = out
        return out

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




def encode_revision(
    revision: Revision, parent: Entry | None, snapshot_every: int, *, based: bool = False,
    refs: bool = False,
) -> Encoded:
    """Encode ``revision``: a snapshot at revision 0 and every ``snapshot_every``
    revisions, otherwise only the fields that differ from ``parent``.

    Unchanged fields are found by identity first (``model_copy`` shares them), then
    equality; only changed fields are dumped, encoded and hashed.

    With ``based``, a delta ``d`` revisions above the snapshot its parent tracks
    (``parent.since``) gets kind ``DELTA + d`` (:data:`BASED` or more) when its ops turn
    that snapshot into this revision too: every field with an op since the snapshot is
    set whole again here. That holds of the two revisions' states whatever rows lie
    between, so a cold read of the row needs the snapshot and this row only
    (state/sqlite/read.py; when no snapshot is at that key any more, as after a compact
    with another interval, the read walks the chain). The body is the same bytes either
    way; the kind takes one byte of SQLite's record where 1 takes none.

    With ``refs`` (SQLite schema 6), an envelope value that is the new state's own is
    stored as a reference to it (:mod:`claimfsm.state.envref`); the hash is the same.
    """
    values = revision.state.__dict__
    sink: codec.Sink = {}
    if parent is None:
        changed: list[str] | tuple[str, ...] = STATE_FIELDS
        ebytes = [b""] * len(STATE_FIELDS)
        digests = [b""] * len(STATE_FIELDS)
        before: dict[str, Any] = _NO_PARENT
    else:
        before = parent.revision.state.__dict__
        same = codec.same
        changed = [n for n in STATE_FIELDS
                   if values[n] is not before[n] and not same(values[n], before[n])]
        ebytes = list(parent.ebytes)
        digests = list(parent.digests())
    # A snapshot's body is every field's bytes: its ops are never stored.
    has_parent = parent is not None
    delta = has_parent and revision.rev % snapshot_every != 0
    ops: dict[str, list[Any]] = {}
    appends: dict[str, list[Any]] = {}
    digest_of = codec.field_digest
    for name in changed:
        i = INDEX[name]
        raw, op = encode_field(name, values[name], before[name], ebytes[i], sink, has_parent)
        if op is not None:
            (appends if op[0] == codec.OP_APPEND else ops)[name] = op
        ebytes[i] = raw
        digests[i] = digest_of(name, raw)
    if appends:  # appended lists lead the body, as they always have
        ops = {**appends, **ops}
    body = orjson.dumps(ops) if delta else codec.snapshot_body(ebytes)
    kind = DELTA if delta else SNAPSHOT
    since: Since | None = None
    if based:
        if not delta:
            since = (revision.rev, _NO_FIELDS)
        elif parent is not None and parent.since is not None:
            since = parent.since
            at, fields = since
            for name in fields:  # all set whole again (inlined: once per commit)
                op = ops.get(name)
                if op is None or op[0] != OP_SET:
                    break
            else:
                kind = DELTA + revision.rev - at
            if not fields.issuperset(ops):
                since = (at, fields.union(ops))
    extra = stored_extra(revision, sink, refs)
    header = codec.header_bytes(
        revision.sid, revision.rev, revision.parent_rev, revision.fsm, revision.skill, revision.ts
    )
    digest = codec.revision_hash(
        codec.GENESIS if parent is None else parent.hash, header, extra, digests
    )
    row: Row = (
        revision.rev, revision.parent_rev, kind,
        revision.fsm, revision.skill, revision.ts, body, extra, digest,
    )
    return Encoded(row, sink, Entry(revision, digest, tuple(ebytes), tuple(digests),
                                    since=since))


_NO_FIELDS: frozenset[str] = frozenset()


def packed(row: Row) -> tuple[Any, ...]:
    """INSERT parameters of ``row`` after its key: ``body`` and ``extra`` packed."""
    body = codec.pack_row(row[6], snapshot=row[2] == SNAPSHOT)
    return (*row[1:6], body, codec.pack_row(row[7]), row[8])


def bound(row: Row) -> tuple[Any, ...]:
    """:func:`packed` as a SQLite row stores it (``ts`` packed when it can be,
    :mod:`claimfsm.state.sqlite.stamp`) and binds it fastest: ``body``, ``extra`` and
    ``hash`` as ``bytearray``. Python's sqlite3 binds a ``bytearray`` directly but sends ``bytes``
    through its adapter lookup first (~0.5 us each here); both are stored as the same
    BLOB, and read back as ``bytes``.
    """
    body = codec.pack_row(row[6], snapshot=row[2] == SNAPSHOT)
    return (*row[1:5], bind_ts(pack_ts(row[5])), bytearray(body),
            bytearray(codec.pack_row(row[7])), bytearray(row[8]))


def bind_ts(ts: str | bytes) -> str | bytearray:
    """A stored ``ts`` (text, or packed bytes) as SQLite binds it fastest: a packed one
    as a ``bytearray``, as the blobs (:func:`bound`)."""
    return bytearray(ts) if isinstance(ts, bytes) else ts


def inflate(rows: list[Row]) -> list[Row]:
    """Rows as read from the file with ``ts`` as text and ``body`` and ``extra`` in
    canonical form; :class:`~claimfsm.state.sqlite.db.CorruptStore` for a ``ts`` that is
    neither."""
    out = rows
    for i, row in enumerate(rows):
        ts = row[5]
        if row[6][:1] == b"x" or row[7][:1] == b"x" or type(ts) is not str:
            if out is rows:
                out = list(rows)
            try:
                ts = ts_text(ts)
            except CodecError as exc:
                raise CorruptStore(f"revision {row[0]} does not decode: {exc}") from exc
            out[i] = (*row[:5], ts, codec.unpack_row(row[6]), codec.unpack_row(row[7]), row[8])
    return out
