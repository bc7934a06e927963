"""One changed field of a revision, encoded: its bytes and its op against the parent
(a set, an append, the keys that changed, values moved out to blobs), and the ``extra``
bytes of the envelope and events. :func:`~claimfsm.state.sqlite.rows.encode_revision`
calls these once per changed field; they are their own module because each kind of
value has its own fast path, while ``rows`` holds the row, the entry and the revision's
assembly. Maintenance re-encodes with :func:`small_op` too.
"""

from __future__ import annotations

import operator
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

from claimfsm.state import codec, envref
from claimfsm.state.model import Revision

__all__ = ["encode_field", "small_op", "stored_extra"]

_JSON_SCALARS = (str, int, float, bool, type(None))
_SMALL_DIFF_MIN = 64


def stored_extra(revision: Revision, sink: codec.Sink, refs: bool) -> bytes:
    """The ``extra`` bytes to store: canonical, or with ``refs`` the form whose ``d``
    values may be references to the new state (:mod:`claimfsm.state.envref`), when the
    canonical bytes are not short enough to store as they are."""
    if revision.envelope is None and not revision.events:
        return b"[null,[]]"
    raw = orjson.dumps([revision.envelope, revision.events])
    if codec.verbatim("", raw):
        return raw
    if refs:
        pair = envref.encode_extra(revision.envelope, revision.events,
                                   revision.state.__dict__, sink)
        if pair is not None:
            return pair[0]
    return orjson.dumps(codec.externalize_extra(revision.envelope, revision.events, sink))


def _appended(child: Any, parent: Any) -> bool:
    if type(child) is not list or type(parent) is not list or not 0 < len(parent) < len(child):
        return False
    prefix = child[: len(parent)]
    # Items shared with the parent (model_copy) are unchanged by definition; else compare.
    return all(map(operator.is_, prefix, parent)) or codec.same(prefix, parent)


# Types orjson would serialise its own way rather than refuse: with these it refuses
# them, so a value it serialises is plain JSON all the way down.
_PLAIN_ONLY = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
               | orjson.OPT_PASSTHROUGH_SUBCLASS)


def _plain(value: Any) -> bytes | None:
    """The JSON of a dict or list that holds nothing pydantic would convert first (the
    common step: no ``to_jsonable_python`` walk), else ``None``. Tuples, enums and UUIDs
    serialise as pydantic's conversion would, so the bytes are the same either way.
    """
    try:
        return orjson.dumps(value, option=_PLAIN_ONLY)
    except TypeError:
        return None


def _identity(value: Any) -> Any:
    return value


def small_op(child: Any, raw: bytes, prior: Any, prior_bytes: bytes, name: str) -> list[Any]:
    """The op for a small plain value: a set, or for a dict that kept some keys of a
    small plain parent, the keys that changed (a growing dict then costs what was added,
    and every read of the chain parses less). Below ``_SMALL_DIFF_MIN`` bytes a set is
    as short, and cheaper to make.
    """
    if (len(raw) >= _SMALL_DIFF_MIN and type(child) is dict and type(prior) is dict
            and codec.verbatim(name, prior_bytes)):
        # A verbatim parent is its own encoded form, so it can stand for its encoding.
        return codec.diff_value(child, prior, prior, _identity, _identity)[1]
    return [codec.OP_SET, child]


def encode_field(
    name: str, child: Any, prior: Any, prior_bytes: bytes, sink: codec.Sink, has_parent: bool
) -> tuple[bytes, list[Any] | None]:
    """One changed field: its encoded bytes and, when it ``has_parent``, its op against
    it (unchanged parts reuse the parent's encoding and add no blob to ``sink``).
    """
    kind = type(child)
    if child is None or ((kind is list or kind is dict) and not child):
        # Null and empty (most fields of a new session): constant bytes, a short set op.
        return (b"null" if child is None else b"[]" if kind is list else b"{}"), (
            [codec.OP_SET, child] if has_parent else None)
    if kind is int or kind is bool or kind is float:
        # A number's JSON is short and holds no string: always its own encoded form.
        return orjson.dumps(child), ([codec.OP_SET, child] if has_parent else None)
    if kind is dict or kind is list:
        if has_parent and _appended(child, prior):
            # A list that only grew at its end (steps, tool results): encode the tail.
            item, _ = codec.externalize_field(name, sink)
            tail = [item(v) for v in to_jsonable_python(child[len(prior):])]
            return codec.splice_append(prior_bytes, orjson.dumps(tail)), [codec.OP_APPEND, tail]
        raw = _plain(child)
        if raw is None:  # holds values pydantic converts first (tuples, datetimes...)
            child = to_jsonable_python(child)
            raw = orjson.dumps(child)
        if not codec.verbatim(name, raw):
            return _externalized(name, child, prior, prior_bytes, sink, has_parent)
    else:
        plain = child if kind is str else to_jsonable_python(child)
        raw = orjson.dumps(plain)
        if not codec.verbatim(name, raw):
            return _externalized(name, plain, prior, prior_bytes, sink, has_parent)
        child = plain
    # Small and plain (the common step): the value is its own encoded form.
    return raw, (small_op(child, raw, prior, prior_bytes, name) if has_parent else None)


def _externalized(
    name: str, child: Any, prior: Any, prior_bytes: bytes, sink: codec.Sink, has_parent: bool
) -> tuple[bytes, list[Any] | None]:
    """A field holding blob-sized or NUL-led values: encoded with its blobs moved out."""
    if type(child) not in _JSON_SCALARS:
        child = to_jsonable_python(child)
    item, whole = codec.externalize_field(name, sink)
    if has_parent and type(child) in (dict, list):
        enc, op = codec.diff_value(child, prior, orjson.loads(prior_bytes), item, whole)
    else:
        enc = whole(child)
        op = [codec.OP_SET, enc]
    return orjson.dumps(enc), (op if has_parent else None)
