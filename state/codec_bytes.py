"""Byte-level pieces of the storage format: packing of blobs and rows, and the hashes
of the revision chain. Re-exported by :mod:`claimfsm.state.codec`, which holds the encoding.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable

import orjson

from claimfsm._base.errors import ClaimFsmError, ErrorCode

__all__ = [
    "FORMAT",
    "GENESIS",
    "CodecError",
    "extra_digest",
    "field_digest",
    "header_bytes",
    "pack_blob",
    "pack_row",
    "revision_hash",
    "splice_append",
    "unpack_blob",
    "unpack_row",
]

FORMAT = 1
"""Storage format version; part of every revision hash."""

GENESIS = bytes(32)
"""The parent hash of revision 0."""

_COMPRESS_MIN = 1024
_ROW_PACK_MIN = 256
# Snapshots (field values in an array, no names) are packed from 1 KB. Below that the
# array is about as long as the named form packed, and packing costs more than the
# bytes are worth: setting up zlib is ~7 us to deflate and ~2.5 us to inflate on every
# cold read, whatever the size.
_SNAPSHOT_PACK_MIN = 1024


class CodecError(ClaimFsmError, ValueError):
    """Stored bytes that do not decode (corruption, or a format this code does not know).
    Also a ``ValueError``, as it always was: the readers catch it as one."""

    code = ErrorCode.STORE_CORRUPT


def _deflate(raw: bytes) -> bytes:
    # zlib level 1 with memLevel 4, not ``zlib.compress``'s 8: the same output for rows
    # and blobs of a few KB, at a third of the cost, most of which is setting up the
    # compressor's tables (``zlib.compress`` spends ~50 us on a 0.5 KB row here).
    packer = zlib.compressobj(1, zlib.DEFLATED, 15, 4)
    return packer.compress(raw) + packer.flush()


def splice_append(encoded: bytes, tail: bytes) -> bytes:
    """The JSON bytes of list ``encoded`` extended by list ``tail`` (both orjson output),
    without re-serialising the list: appends cost what they add.
    """
    if tail == b"[]":
        return encoded
    if encoded == b"[]":
        return tail
    return encoded[:-1] + b"," + tail[1:]


def pack_blob(raw: bytes) -> tuple[int, bytes]:
    """``(z, data)`` to store: zlib (z=1) when it saves at least a tenth, else raw (z=0).

    JSON blobs (page entries, shared items) are tried from 256 bytes, since their
    repeated keys compress well; text blobs from 1 KB.
    """
    least = _ROW_PACK_MIN if raw[:1] in (b"{", b"[") else _COMPRESS_MIN
    if len(raw) >= least:
        packed = _deflate(raw)
        if len(packed) * 10 < len(raw) * 9:
            return 1, packed
    return 0, raw


def pack_row(raw: bytes, *, snapshot: bool = False) -> bytes:
    """A row's ``body`` or ``extra`` as stored: zlib when it saves at least a tenth, from
    256 bytes (a snapshot ``body`` from 1 KB).

    Canonical bodies are JSON objects or arrays (``{``/``[``); zlib streams start with
    ``x``, so the stored bytes say which they are and no column is needed. Hashes are
    always over the canonical bytes, so packing never changes a chain.
    """
    if len(raw) >= (_SNAPSHOT_PACK_MIN if snapshot else _ROW_PACK_MIN):
        packed = _deflate(raw)
        if len(packed) * 10 < len(raw) * 9:
            return packed
    return raw


def unpack_row(data: bytes) -> bytes:
    """The canonical bytes of a stored ``body``/``extra``. Bytes that do not inflate
    are returned as they are, so the JSON decoder reports them as undecodable.
    """
    if data[:1] == b"x":
        try:
            return zlib.decompress(data)
        except zlib.error:
            return bytes(data)
    return data


def unpack_blob(z: int, data: bytes) -> bytes:
    """The raw bytes of a stored blob."""
    if not isinstance(data, bytes):
        raise CodecError(f"blob data is {type(data).__name__}, not bytes")
    if z == 0:
        return data
    if z == 1:
        try:
            return zlib.decompress(data)
        except zlib.error as exc:
            raise CodecError(f"blob does not decompress: {exc}") from exc
    raise CodecError(f"unknown blob packing {z}")


_SHORT_DIGESTS: dict[tuple[str, bytes], bytes] = {}
_PREFIXES: dict[str, bytes] = {}
_sha256 = hashlib.sha256


def field_digest(name: str, encoded: bytes) -> bytes:
    """sha256 of one field's name and encoded bytes (the leaves of the revision hash)."""
    if len(encoded) <= 8:  # empty lists and dicts, null, small numbers: seen again and again
        key = (name, encoded)
        known = _SHORT_DIGESTS.get(key)
        if known is None:
            known = _sha256(name.encode() + b"=" + encoded).digest()
            if len(_SHORT_DIGESTS) < 4096:
                _SHORT_DIGESTS[key] = known
        return known
    prefix = _PREFIXES.get(name)
    if prefix is None:
        prefix = name.encode() + b"="
        if len(_PREFIXES) < 4096:
            _PREFIXES[name] = prefix
    return _sha256(prefix + encoded).digest()


def header_bytes(
    sid: str, rev: int, parent_rev: int | None, fsm: str, skill: str | None, ts: str
) -> bytes:
    """Canonical bytes of a revision's scalar fields."""
    return orjson.dumps([FORMAT, sid, rev, parent_rev, fsm, skill, ts])


def revision_hash(
    parent_hash: bytes, header: bytes, extra: bytes, digests: Iterable[bytes]
) -> bytes:
    """``sha256(parent_hash + canonical content)``; the content is the header, the digest
    of the encoded envelope and events (:func:`extra_digest`), and every state field's
    digest in field order.
    """
    # One buffer and one hashing call: the same digest as feeding the parts in turn.
    return _sha256(b"".join((parent_hash, header, extra_digest(extra), *digests))).digest()


def extra_digest(extra: bytes) -> bytes:
    """The sha256 of a revision's canonical ``extra`` bytes, from those bytes or from the
    stored form with references (:mod:`claimfsm.state.envref`: ``r``, then that digest),
    so a revision's hash never depends on how its envelope is stored."""
    if extra[:1] == b"r":
        return extra[1:33]
    return _sha256(extra).digest()
