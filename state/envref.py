"""Envelope values stored as references to the state they were applied to (SQLite
schema 6).

A step's envelope usually carries, in ``d``, the very objects the driver then put into
the new state (a custom machine's ``d`` is merged into ``memory``; a growing log is the
same list in both). The canonical ``extra`` of a revision, ``[envelope, events]`` in
encoded form (:func:`claimfsm.state.codec.externalize_extra`), holds such a value a
second time; its *stored* form may instead hold a reference, ``"\\x00F" + path``, where
``path`` is a state field's name, or ``"memory/" + key``. A reference is only written
for a non-empty list or dict made of plain JSON types all the way down that is the
same object as the state's value at that path (an identity check, never a deep
compare), so decoding the state's value gives back exactly what the envelope held.

Stored bytes with references start with ``r`` and the sha256 of the canonical bytes,
then the JSON: the revision hash covers that digest, the same one the canonical bytes
give (:func:`claimfsm.state.codec_bytes.extra_digest`), so a chain never depends on how its
envelopes are stored. :func:`canonical` rebuilds the canonical bytes from the state
(what ``fsck`` checks against the digest).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from claimfsm.state import codec
from claimfsm.state.codec import CodecError

__all__ = [
    "HEAD", "TAG", "canonical", "digest_matches", "encode_extra", "is_referenced", "lookup",
    "parse", "resolve",
]

TAG = "\x00F"
"""The tag of a reference to the state: ``TAG + path``."""

_PREFIX = b"r"
_DIGEST = 32
HEAD = 1 + _DIGEST
"""Bytes before the JSON of the stored form with references."""
_MEMORY = "memory/"
_EXACT = frozenset({str, int, float, bool, type(None)})


def _exact(value: Any) -> bool:
    """Whether ``value`` is made of JSON's own types only (no subclass, tuple, enum):
    then its decoded form is equal to it and encodes to the same bytes."""
    kind = type(value)
    if kind is list:
        items: Any = value
    elif kind is dict:
        if not all(type(k) is str for k in value):
            return False
        items = value.values()
    else:
        return kind in _EXACT
    kinds = set(map(type, items))
    if kinds <= _EXACT:
        return True
    return all(map(_exact, items))


def _paths(d: dict[str, Any], state: Mapping[str, Any]) -> dict[str, str]:
    """The ``d`` keys whose value may be stored as a reference, and to what path."""
    out: dict[str, str] = {}
    memory = state.get("memory")
    for key, value in d.items():
        kind = type(value)
        if (kind is not list and kind is not dict) or not value:
            continue
        if state.get(key, None) is value and key != "memory":
            path = key
        elif type(memory) is dict and memory.get(key) is value:
            path = _MEMORY + key
        else:
            continue
        if _exact(value):
            out[key] = path
    return out


def encode_extra(envelope: Any, events: Any, state: Mapping[str, Any],
                 sink: codec.Sink) -> tuple[bytes, bytes] | None:
    """``(stored, canonical)`` bytes of ``[envelope, events]`` when some ``d`` value can
    be stored as a reference to ``state`` (a state's ``__dict__``), else ``None``. Blobs
    only the canonical form names are not added to ``sink``.
    """
    d = envelope.get("d") if type(envelope) is dict else None
    if type(d) is not dict:
        return None
    paths = _paths(d, state)
    if not paths:
        return None
    scratch: codec.Sink = {}
    enc = codec.externalize_extra(envelope, events, scratch)
    raw = orjson.dumps(enc)
    stored_d = dict(enc[0]["d"])
    for key, path in paths.items():
        stored_d[key] = TAG + path
    stored = [{**enc[0], "d": stored_d}, enc[1]]
    if scratch:
        # The blobs the stored form names, and theirs (a JSON blob may name string blobs):
        # those only the referenced values' canonical form names are not stored.
        pending = list(codec.iter_refs(stored))
        while pending:
            tag, digest = pending.pop()
            if digest not in sink:
                sink[digest] = raw_blob = scratch[digest]
                if tag == "J":
                    pending.extend(codec.iter_refs(orjson.loads(raw_blob)))
    body = orjson.dumps(stored)
    return _PREFIX + hashlib.sha256(raw).digest() + body, raw


def is_referenced(extra: bytes) -> bool:
    """Whether canonical-or-stored ``extra`` bytes are the stored form with references."""
    return extra[:1] == _PREFIX


def parse(extra: bytes) -> Any:
    """The parsed JSON of stored ``extra`` bytes, either form (references left as they
    are); :class:`CodecError` when it is not JSON."""
    if extra[:1] == _PREFIX:
        extra = extra[HEAD:]
    try:
        return orjson.loads(extra)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"envelope/events are not JSON: {exc}") from exc


def lookup(path: str, values: Callable[[str], Any]) -> Any:
    """The state's value at ``path``; ``values(name)`` gives a field's plain value.
    :class:`CodecError` when there is none, or it is no list or dict."""
    try:
        if path.startswith(_MEMORY):
            memory = values("memory")
            value = memory.get(path[len(_MEMORY):]) if type(memory) is dict else None
        else:
            value = values(path)
    except KeyError:
        value = None
    if (type(value) is not list and type(value) is not dict) or not value:
        raise CodecError(f"envelope reference {path!r} names no list or dict of the state")
    return value


def _refs(value: Any) -> dict[str, str]:
    env = value[0] if type(value) is list and value else None
    d = env.get("d") if type(env) is dict else None
    if type(d) is not dict:
        return {}
    return {k: v[len(TAG):] for k, v in d.items() if type(v) is str and v[:2] == TAG}


def resolve(value: Any, fetch: Callable[[str], bytes], values: Callable[[str], Any]) -> Any:
    """Parsed stored ``[envelope, events]`` back to plain JSON: references to the state
    become its values (``values(name)``: a field's plain value), blobs are fetched."""
    refs = _refs(value)
    if not refs:
        return codec.resolve(value, fetch)
    env = value[0]
    d = {k: (lookup(refs[k], values) if k in refs else codec.resolve(v, fetch))
         for k, v in env["d"].items()}
    out = {k: (d if k == "d" else codec.resolve(v, fetch)) for k, v in env.items()}
    return [out, codec.resolve(value[1], fetch)]


def canonical(extra: bytes, values: Callable[[str], Any]) -> bytes:
    """The canonical bytes stored ``extra`` stands for (references replaced by the
    encoded state values); :class:`CodecError` when a reference does not resolve."""
    value = parse(extra)
    if not is_referenced(extra):
        return extra
    refs = _refs(value)
    if not refs:
        raise CodecError("envelope bytes are marked as holding references but hold none")
    _, whole = codec.externalize_field("", {})
    env = value[0]
    d = {k: (whole(lookup(refs[k], values)) if k in refs else v) for k, v in env["d"].items()}
    return orjson.dumps([{**env, "d": d}, value[1]])


def digest_matches(extra: bytes, values: Callable[[str], Any]) -> bool:
    """Whether stored ``extra`` with references stands for the canonical bytes its
    digest names (always true of the canonical form)."""
    if not is_referenced(extra):
        return True
    return hashlib.sha256(canonical(extra, values)).digest() == extra[1:1 + _DIGEST]
