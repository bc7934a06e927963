"""Seals of record lines and the revision chain hashes a record carries.

A line of a format 2 record ends with ``"sum":"<digest>:<locator>"``:

- ``digest``: sha256 (hex) of the line's bytes before ``,"sum":``. It covers everything
  the line holds, the chain hash ``h`` included, so any edit shows before a replay runs.
- ``locator``: 4 hex digits per part of the line (every key down to three levels of
  objects, every item of a top-level list, each with its path), in the line's order. It
  is only there to *name* an edited field: a line whose digest differs is walked again,
  and the first part whose digits differ is the field reported.

A seal is not a signature: anyone with this code can seal an edited line again. What such
a forger cannot do without rewriting the rest of the record is keep the chain: ``h`` is
the revision's hash as the stores compute it (:func:`claimfsm.state.codec.revision_hash`
over the parent's hash and everything the revision holds), which a strict replay
recomputes for every revision, and which ``claimfsm history --json`` shows for the stored
session. docs/replay.md says what is and is not detected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson

from claimfsm.replay.diff import join_path
from claimfsm.replay.errors import RecordError, RecordTampered
from claimfsm.state import codec
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.rows import Entry, encode_revision

__all__ = ["SEAL_KEY", "HashChain", "is_digest", "locate", "seal_line", "unseal"]

#: The last key of every format 2 line.
SEAL_KEY = "sum"
_TAIL = b',"sum":"'
# Domain separation: a line digest is never equal to some other sha256 of the same bytes.
_PREFIX = b"claimfsm record line\n"
_DIGEST_HEX = 64
_PART_HEX = 4
_DEPTH = 3
# Revisions are encoded only to be hashed: the snapshot cadence changes the stored body,
# never the hash, so any value works; this one never asks for a snapshot.
_NEVER = 1 << 62


def _parts(obj: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in obj.items():
        if type(value) is list and value:  # top-level lists: every item on its own
            for i, item in enumerate(value):
                yield from _walk(join_path(key, i), item, 1)
        else:
            yield from _walk(key, value, 1)


def _walk(path: str, value: Any, depth: int) -> Iterator[tuple[str, Any]]:
    if type(value) is dict and value and depth < _DEPTH:
        for key, item in value.items():
            yield from _walk(join_path(path, key), item, depth + 1)
    else:
        yield path, value


def _part_digest(path: str, value: Any) -> str:
    raw = path.encode() + b"\x00" + orjson.dumps(value)
    return hashlib.blake2b(raw, digest_size=_PART_HEX // 2).hexdigest()


def _locator(obj: dict[str, Any]) -> str:
    return "".join(_part_digest(path, value) for path, value in _parts(obj))


def _digest(body: bytes, parts: str) -> str:
    return hashlib.sha256(_PREFIX + body + b"\x00" + parts.encode()).hexdigest()


def seal_line(obj: dict[str, Any]) -> bytes:
    """The sealed line of ``obj`` (a line's fields in order, without its seal), newline
    included."""
    body = orjson.dumps(obj)[:-1]
    parts = _locator(obj)
    return body + _TAIL + f"{_digest(body, parts)}:{parts}".encode() + b'"}\n'


def unseal(raw: bytes, obj: dict[str, Any], *, line: int | None = None,
           source: str = "") -> dict[str, Any]:
    """``obj`` (the parsed ``raw`` line, without its newline) without its seal, after
    checking the seal; :class:`RecordTampered` names the first edited field."""
    seal = obj.pop(SEAL_KEY, None)
    if not isinstance(seal, str):
        raise RecordTampered("the line has no seal" if seal is None
                             else "the seal is not a string", line=line, source=source,
                             field=SEAL_KEY)
    digest, _, parts = seal.partition(":")
    at = raw.rfind(_TAIL)
    whole = at >= 0 and raw[at:] == _TAIL + seal.encode() + b'"}'
    if whole and _digest(raw[:at], parts) == digest:
        return obj
    raise RecordTampered("the line differs from what was sealed (edited after it was "
                         "written)", line=line, source=source,
                         field=locate(obj, raw[:at] if whole else None, digest, parts))


def locate(obj: dict[str, Any], body: bytes | None, digest: str, parts: str) -> str:
    """Where a line whose seal does not match was edited (``body``: its bytes before the
    seal, ``None`` when something follows the seal): the path of the first part whose
    locator digits differ from ``parts``; ``sum`` when the seal itself was edited;
    ``(line)`` when every value is as sealed but the bytes between them are not."""
    actual = _locator(obj)
    if body is not None and _digest(body, actual) == digest:
        return SEAL_KEY  # the values are as sealed: only the locator digits changed
    if len(parts) % _PART_HEX or any(c not in "0123456789abcdef" for c in parts):
        return SEAL_KEY
    for n, (path, _) in enumerate(_parts(obj)):
        at = n * _PART_HEX
        if parts[at:at + _PART_HEX] != actual[at:at + _PART_HEX]:
            return path
    if len(actual) != len(parts):  # the sealed line had more parts: the last ones went
        return "(end of line)"
    if _digest(orjson.dumps(obj)[:-1], parts) == digest:
        return "(line)"
    return SEAL_KEY


def is_digest(value: object) -> bool:
    """Whether ``value`` looks like a chain hash (64 lower-case hex digits)."""
    return (isinstance(value, str) and len(value) == _DIGEST_HEX
            and all(c in "0123456789abcdef" for c in value))


class HashChain:
    """The chain hashes of one session's revisions, computed as the stores compute them
    (SQLite and PostgreSQL store the same bytes: a record's ``h`` can be compared with
    the stored session's).

    Feed revisions in order with :meth:`add`; the previous revision's encoding is kept, so
    each costs what changed. :meth:`resume` continues after a revision known only by its
    hash (appending to a record).
    """

    def __init__(self) -> None:
        self._last: Entry | None = None
        self._parent: tuple[int, bytes] | None = None

    @property
    def last(self) -> str | None:
        """The chain hash of the last revision added or resumed after (hex)."""
        if self._last is not None:
            return self._last.hash.hex()
        return None if self._parent is None else self._parent[1].hex()

    def resume(self, rev: int, hash_hex: str) -> None:
        """Continue after revision ``rev`` whose chain hash is ``hash_hex``."""
        self._last = None
        self._parent = (rev, bytes.fromhex(hash_hex))

    def add(self, revision: Revision) -> str:
        """The chain hash (hex) of ``revision``, the next revision of the chain."""
        last = self._last
        if last is not None and last.revision.rev == revision.parent_rev:
            entry = encode_revision(revision, last, _NEVER).entry
        else:
            encoded = encode_revision(revision, None, _NEVER)
            entry = encoded.entry
            if revision.parent_rev is not None:
                # Encoded without its parent, the revision hangs off the genesis hash: hash
                # its parts again over the parent's hash (how a body is stored never
                # changes a hash).
                parent = self._parent
                if parent is None or parent[0] != revision.parent_rev:
                    raise RecordError(f"revision {revision.rev} does not follow the chain "
                                      "(its parent's hash is unknown)", source=revision.sid)
                header = codec.header_bytes(revision.sid, revision.rev, revision.parent_rev,
                                            revision.fsm, revision.skill, revision.ts)
                digest = codec.revision_hash(parent[1], header, encoded.row[7],
                                             entry.digests())
                entry = Entry(revision, digest, entry.ebytes, entry.digests())
        self._last, self._parent = entry, None
        return entry.hash.hex()
