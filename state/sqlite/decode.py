"""Rows back to revisions: the chain decoder shared by reads, fsck, compact and fork.

A row is ``(rev, parent_rev, kind, fsm, skill, ts, body, extra, hash)``. ``body`` is a
full snapshot of the encoded state (``kind`` 0) or the field ops against the parent
(``kind`` 1, or ``1 + d`` when they also apply to the snapshot ``d`` revisions below: a
walk applies both alike);
``extra`` is the encoded ``[envelope, events]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from claimfsm.state import codec, envref
from claimfsm.state.codec import STATE_FIELDS, CodecError
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.db import CorruptStore
from claimfsm.state.sqlite.rows import (
    BASED,
    DELTA,
    INDEX,
    SNAPSHOT,
    Entry,
    Row,
    state_from,
    trusted,
)

__all__ = ["ChainDecoder", "decode_rows"]

_UNLOADED = object()  # an encoded field not parsed yet (decoder resumed from a cache entry)


class ChainDecoder:
    """Replays rows (a snapshot, then deltas) of one session, oldest first.

    :meth:`feed` updates the encoded fields; :meth:`revision` builds the plain revision
    (resolving blobs only for fields that changed); :meth:`hash_of` recomputes the
    chain hash. Raises :class:`CodecError` on bytes that do not decode.
    """

    @classmethod
    def resume(cls, sid: str, entry: Entry) -> ChainDecoder:
        """A decoder positioned just after the cached ``entry`` (its children follow)."""
        decoder = cls(sid)
        decoder._eb = list(entry.ebytes)
        decoder.enc = [_UNLOADED] * len(STATE_FIELDS)
        decoder._plain = [entry.revision.state.__dict__[n] for n in STATE_FIELDS]
        decoder.parent_hash = entry.hash
        decoder._started = True
        return decoder

    def __init__(self, sid: str) -> None:
        n = len(STATE_FIELDS)
        self.sid = sid
        self.enc: list[Any] = [None] * n
        # Encoded bytes per field; None until needed (a read that walks 15 deltas of a
        # big field then serialises it once, not 15 times).
        self._eb: list[bytes | None] = [b""] * n
        self.changed: dict[int, list[Any] | None] = {}
        self.parent_hash = codec.GENESIS
        self._digests: list[bytes | None] = [None] * n
        self._plain: list[Any] = [None] * n
        # Fields whose plain value is stale: the op to patch it with, or None to rebuild.
        self._dirty: dict[int, list[Any] | None] = {}
        self._started = False

    def feed(self, kind: int, body: bytes) -> None:
        """Apply one row body."""
        if kind == SNAPSHOT and self._started and body == codec.snapshot_body(self.ebytes):
            # A mid-chain snapshot repeats what the deltas built (the common case): the
            # bytes say so without parsing it, or serialising each of its fields.
            self.changed = {}
            return
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise CodecError(f"row body is not JSON: {exc}") from exc
        if kind == SNAPSHOT:
            values = codec.snapshot_values(obj)
            if not self._started:  # the first row: take every field as it is
                n = len(STATE_FIELDS)
                self.enc = list(values)
                self._eb = [None] * n
                self._digests = [None] * n
                self.changed = dict.fromkeys(range(n))
                self._dirty = dict.fromkeys(range(n))
                self._started = True
                return
            self.changed = {}
            for i, value in enumerate(values):
                # Mid-chain snapshots repeat what the deltas built: keep unchanged fields
                # (and their resolved values) instead of resolving the whole state again.
                encoded = orjson.dumps(value)
                if encoded == self._field_bytes(i):
                    continue
                self._set(i, value, encoded)
                self.changed[i] = None
                self._dirty[i] = None
        elif kind == DELTA or (type(kind) is int and kind >= BASED):
            if type(obj) is not dict:
                raise CodecError("row body is not an object")
            if not self._started:
                raise CodecError("delta without a base snapshot")
            self.changed = {}
            for name, op in obj.items():
                at = INDEX.get(name)
                if at is None:
                    raise CodecError(f"delta names unknown field {name!r}")
                base = self.enc[at]
                if base is _UNLOADED:
                    base = orjson.loads(self._field_bytes(at))
                value = codec.apply_op(base, op)
                known = self._eb[at]
                if op[0] == codec.OP_APPEND and known is not None:
                    # Append ops splice bytes instead of re-serialising the whole list.
                    self._set(at, value, codec.splice_append(known, orjson.dumps(op[1])))
                else:
                    self._set(at, value)
                self.changed[at] = op
                self._dirty[at] = None if at in self._dirty else op
        else:
            raise CodecError(f"unknown row kind {kind}")

    def _set(self, i: int, value: Any, encoded: bytes | None = None) -> None:
        self.enc[i] = value
        self._eb[i] = encoded
        self._digests[i] = None

    def _field_bytes(self, i: int) -> bytes:
        encoded = self._eb[i]
        if encoded is None:
            encoded = self._eb[i] = orjson.dumps(self.enc[i])
        return encoded

    @property
    def ebytes(self) -> list[bytes]:
        """The encoded bytes of every field of the row fed last."""
        eb = self._eb
        if None in eb:
            for i, encoded in enumerate(eb):
                if encoded is None:
                    eb[i] = orjson.dumps(self.enc[i])
        return eb  # type: ignore[return-value]  # no None left

    def digests(self) -> list[bytes]:
        """Per-field digests of the current revision."""
        known = self._digests
        if None in known:  # only the fields the last rows changed
            for i, digest in enumerate(known):
                if digest is None:
                    known[i] = codec.field_digest(STATE_FIELDS[i], self._field_bytes(i))
        return list(known)  # type: ignore[arg-type]  # no None left

    def hash_of(self, row: Row, sid: str | None = None) -> bytes:
        """The chain hash of ``row`` (fed last) under ``sid`` (default: this session)."""
        rev, parent_rev, _kind, fsm, skill, ts, _body, extra, _hash = row
        header = codec.header_bytes(sid or self.sid, rev, parent_rev, fsm, skill, ts)
        return codec.revision_hash(self.parent_hash, header, extra, self.digests())

    def revision(self, row: Row, fetch: Callable[[str], bytes]) -> Entry:
        """The row fed last as a cache entry (plain values, blobs resolved)."""
        for i, op in self._dirty.items():
            self._plain[i] = self._plain_field(i, op, fetch)
        self._dirty = {}
        rev, parent_rev, _kind, fsm, skill, ts, _body, extra, digest = row
        state = state_from(dict(zip(STATE_FIELDS, self._plain, strict=True)))
        envelope, events = self._extra(extra, fetch, state.__dict__.__getitem__)
        revision = trusted(Revision, {
            "sid": self.sid, "rev": rev, "parent_rev": parent_rev, "fsm": fsm, "skill": skill,
            "envelope": envelope, "state": state, "ts": ts, "events": events,
        })
        # Field bytes not known yet are serialised only if a commit or a walk needs them.
        return Entry(revision, bytes(digest), enc=tuple(self.enc), known=tuple(self._eb))

    def _plain_field(self, i: int, op: list[Any] | None, fetch: Callable[[str], bytes]) -> Any:
        enc = self.enc[i]
        kind = type(enc)
        # Only strings (NUL-led) and non-empty containers can hold references.
        if kind is str:
            if enc[:1] != "\x00":
                return enc
        elif (kind is not dict and kind is not list) or not enc:
            return enc
        if not codec.has_refs(self._field_bytes(i)):
            return enc
        prior = self._plain[i]
        # Reuse the previous plain value for what the op left alone.
        if op is not None and op[0] == codec.OP_APPEND and type(prior) is list:
            return prior + codec.resolve(op[1], fetch)
        if op is not None and op[0] == codec.OP_UPDATE and type(prior) is dict:
            dropped = set(op[2])
            out = {k: v for k, v in prior.items() if k not in dropped}
            for k, v in op[1].items():
                out[k] = codec.resolve(v, fetch)
            return out
        return codec.resolve(enc, fetch)

    @staticmethod
    def _extra(extra: bytes, fetch: Callable[[str], bytes],
               values: Callable[[str], Any]) -> tuple[Any, list[Any]]:
        value = envref.parse(extra)
        if type(value) is not list or len(value) != 2 or type(value[1]) is not list:
            raise CodecError("envelope/events are not [envelope, events]")
        if codec.has_refs(extra):
            value = envref.resolve(value, fetch, values)
        return value[0], value[1]

    def advance(self, digest: bytes) -> None:
        """Make ``digest`` the parent hash of the next row."""
        self.parent_hash = digest


def decode_rows(sid: str, decoder: ChainDecoder, rows: list[Row],
                fetch: Callable[[str], bytes], keep: Callable[[Row, Entry], None], *,
                every: bool = True, first: int = 0) -> list[Entry]:
    """``rows`` of session ``sid`` through ``decoder``: an entry for each (with
    ``every=False`` only the last; with ``first``, none for revisions before it: the
    rows from a snapshot up to a page are fed, not built), each also handed to ``keep``
    (a store's cache). Raises :class:`~claimfsm.state.sqlite.db.CorruptStore` when a row
    does not decode."""
    out: list[Entry] = []
    last = len(rows) - 1
    try:
        for i, row in enumerate(rows):
            decoder.feed(row[2], row[6])
            if (every and row[0] >= first) or i == last:
                entry = decoder.revision(row, fetch)
                keep(row, entry)
                out.append(entry)
    except (ValueError, TypeError, KeyError) as exc:  # CodecError, or rows of wrong types
        raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
    return out
