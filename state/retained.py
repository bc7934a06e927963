"""A session's revisions as the memory store retains them: the newest as given, older
ones packed out of the cyclic collector's reach.

A process that keeps many sessions in memory keeps every revision of each, and CPython's
cyclic collector walks every container it can reach at each full collection: a step of a
48-step session cost a third more CPU than one of a 6-step session for that walk alone
(docs/bench.md, "Longer runs"). So a session keeps its newest :data:`LIVE` revisions as
the objects it was given (a read near the head, as a retry, rollback or fork makes, costs
nothing), and packs older ones, :data:`BATCH` at a time: their values in one pickled
payload (exact built-in types only; a value several of them share is written once), each
revision a tuple of its stamps, the payload and its place in it (all untracked once the
collector has seen them). Reading a packed revision builds it again: the same values, of
the same types (a list stays a list), equal to what was committed. A revision holding any
other value (a model, a subclass, a datetime...) keeps its values as given (the rest of
its batch is then packed one revision at a time).
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from claimfsm.state.model import Revision, SessionState, builder

__all__ = ["BATCH", "LIVE", "Chain"]

LIVE = 8
"""Revisions a session keeps as given while it is being stepped (the head and the ones
before it): a retry, rollback or fork near the head reads them for nothing."""

BATCH = 16
"""Revisions packed at once, in one payload, once a session keeps
:data:`LIVE` + ``BATCH`` as given: one call instead of sixteen, and a string the
revisions share (a log's entries) is written once a batch instead of once a revision."""

_FIELDS: tuple[str, ...] = tuple(SessionState.model_fields)
_state = builder(SessionState)
_revision = builder(Revision)


def _ordered(values: dict[str, Any]) -> Any:
    """A state's values in field order (a state built by hand may hold them in another)."""
    return values.values() if tuple(values) == _FIELDS else map(values.__getitem__, _FIELDS)


class _Exact(pickle.Pickler):
    """A pickler of the exact built-in types only (``None``, bools, ``int``, ``float``,
    ``str``, ``bytes``, ``bytearray``, ``dict``, ``list``, ``tuple``, ``set``,
    ``frozenset``), each read back as the type it was: any other object (a subclass, a
    model, a datetime, an enum, a class, a function...) reaches :meth:`reducer_override`,
    which refuses it. ``marshal`` is about as fast but writes a
    ``bytearray`` (any buffer) as ``bytes``."""

    def reducer_override(self, obj: Any) -> Any:
        raise pickle.PicklingError(type(obj).__name__)


def _payload(values: tuple[Any, ...]) -> Any:
    """``values`` as packed revisions keep them: pickled bytes (one call, so an object
    several of them hold, a field a revision shares with its parent or a list the state
    and the envelope share, is written once and read back shared), or the tuple itself
    when one of them is not exactly writable (:class:`_Exact`)."""
    out = io.BytesIO()
    try:
        _Exact(out, pickle.HIGHEST_PROTOCOL).dump(values)
    except (pickle.PicklingError, RecursionError):
        return values
    return out.getvalue()


class Chain(list[Revision]):
    """Revisions ``0..head`` of one session: the items are the newest ones, as given
    (``chain[-1]`` is the head), the packed ones come before them. Not thread-safe (the
    store locks). A list, so that a short session costs what a list of its revisions
    did: the store appends with ``list.append`` and calls :meth:`pack_oldest` once more
    than :data:`LIVE` + :data:`BATCH` are kept."""

    __slots__ = ("_records", "_sid")

    def __init__(self, first: Revision) -> None:
        super().__init__((first,))
        self._sid = first.sid
        # Per packed revision: (fsm, skill, ts, payload, slot). The payload is its
        # batch's (the batch's records share it); ``slot`` its values' index in it.
        self._records: list[tuple[Any, ...]] = []

    def total(self) -> int:
        """How many revisions the session has, packed and as given."""
        return len(self._records) + len(self)

    def pack_oldest(self) -> None:
        """Pack all but the newest :data:`LIVE` revisions kept as given."""
        self._pack(len(self) - LIVE)

    def _pack(self, n: int) -> None:
        if n <= 0:
            return
        given = self[:n]
        del self[:n]
        # Each revision's state values whole, its envelope and events: the fields it
        # shares with its parent cost the pickle a memo reference each, no diff in Python.
        batch = tuple((*_ordered(r.state.__dict__), r.envelope, r.events) for r in given)
        payload = _payload(batch)
        if type(payload) is bytes:
            self._records += [(r.fsm, r.skill, r.ts, payload, slot)
                              for slot, r in enumerate(given)]
        else:  # a value the pickler refuses: the others are still packed, one by one
            self._records += [(r.fsm, r.skill, r.ts, _payload((values,)), 0)
                              for r, values in zip(given, batch, strict=True)]

    def get(self, rev: int) -> Revision:
        """Revision ``rev`` (``0 <= rev < len(self)``): as given when it is one of the
        newest, else built again from what was packed."""
        packed = len(self._records)
        if rev >= packed:
            return self[rev - packed]
        return self._build(rev)

    def revisions(self, start: int = 0, stop: int | None = None) -> list[Revision]:
        """Revisions ``start .. stop - 1`` (to the head by default), oldest first."""
        packed = len(self._records)
        total = packed + len(self)
        end = total if stop is None else min(stop, total)
        # One load of each payload for the whole range: unchanged fields come out shared
        # between neighbours, as they were committed.
        loaded: dict[int, tuple[Any, ...]] = {}
        built = [self._build(rev, loaded) for rev in range(start, min(end, packed))]
        return built + self[max(start - packed, 0): max(end - packed, 0)]

    def _values(self, rev: int, loaded: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
        """Revision ``rev``'s packed values, its whole batch loaded into ``loaded``."""
        payload, slot = self._records[rev][3:]
        batch: tuple[tuple[Any, ...], ...] = (
            pickle.loads(payload) if type(payload) is bytes else payload)
        first = rev - slot
        for i, values in enumerate(batch):
            loaded[first + i] = values
        return batch[slot]

    def _build(self, rev: int, loaded: dict[int, tuple[Any, ...]] | None = None) -> Revision:
        fsm, skill, ts = self._records[rev][:3]
        own = loaded.get(rev) if loaded is not None else None
        if own is None:
            own = self._values(rev, {} if loaded is None else loaded)
        values = dict(zip(_FIELDS, own, strict=False))
        values["sid"] = self._sid
        return _revision({
            "sid": self._sid, "rev": rev, "parent_rev": rev - 1 if rev else None, "fsm": fsm,
            "skill": skill, "envelope": own[-2], "state": _state(values), "ts": ts,
            "events": own[-1],
        })

    def forked(self, at: int, new_sid: str) -> Chain:
        """A new chain of revisions ``0..at`` re-stamped with ``new_sid`` (the packed
        records are shared: nothing changes them)."""
        packed = len(self._records)
        if at < packed:
            # The fork's head was packed: it is built (with the new sid), kept as given.
            head = self._build(at)
            state = head.state.model_copy(update={"sid": new_sid})
            copy = Chain(head.model_copy(update={"sid": new_sid, "state": state}))
            copy._records = self._records[:at]
            return copy
        given = [r.model_copy(update={"sid": new_sid,
                                      "state": r.state.model_copy(update={"sid": new_sid})})
                 for r in self[: at + 1 - packed]]
        copy = Chain(given[0])
        copy[:] = given
        copy._records = self._records[:]
        return copy
