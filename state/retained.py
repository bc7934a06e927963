"""A session's revisions as the memory store retains them: the newest as given, older
ones packed out of the cyclic collector's reach.

A process that keeps many sessions in memory keeps every revision of each, and CPython's
cyclic collector walks every container it can reach at each full collection: a step of a
48-step session cost a third more CPU than one of a 6-step session for that walk alone
(docs/bench.md, "Longer runs"). So a session keeps its newest :data:`LIVE` revisions as
the objects it was given (a read near the head, as a retry, rollback or fork makes, costs
nothing), and packs older ones: each field value a revision introduced is kept once, in a
per-session pool, as ``marshal`` bytes when it is a container the collector would walk,
and the revision becomes a tuple of its stamps and the pool indices of its fields (all
untracked once the collector has seen them). Reading a packed revision builds it again:
the same values, of the same types (a list stays a list), equal to what was committed.
Values ``marshal`` cannot write exactly (models, subclasses, datetimes...) are kept as
given.
"""

from __future__ import annotations

import marshal
from itertools import compress
from operator import is_not
from typing import Any

from claimfsm.state.model import Revision, SessionState, builder

__all__ = ["LIVE", "Chain"]

LIVE = 8
"""Revisions a session keeps as given (the head and the ones before it): packing costs
about a microsecond a revision, which the collector gives back only once many are kept."""

_FIELDS: tuple[str, ...] = tuple(SessionState.model_fields)
_POSITIONS = range(len(_FIELDS))
_SID = _FIELDS.index("sid")
# A field's place in the pack: the revision that introduced its value, and its position
# in that revision's payload (changed fields, then the envelope and the events).
_SHIFT = 5
_MASK = (1 << _SHIFT) - 1
_state = builder(SessionState)
_revision = builder(Revision)


def _payload(values: tuple[Any, ...]) -> Any:
    """``values`` as a packed revision keeps them: ``marshal`` bytes (one call, so a list
    the state and the envelope share is written once), or the tuple itself when one of
    them is not exactly writable (a model, a subclass, a datetime...)."""
    try:
        return marshal.dumps(values)
    except ValueError:
        return values


class Chain(list[Revision]):
    """Revisions ``0..head`` of one session: the items are the newest ones, as given
    (``chain[-1]`` is the head), the packed ones come before them. Not thread-safe (the
    store locks). A list, so that a short session costs what a list of its revisions
    did: the store appends with ``list.append`` and calls :meth:`pack_oldest` once more
    than :data:`LIVE` are kept."""

    __slots__ = ("_idx", "_last", "_records", "_sid")

    def __init__(self, first: Revision) -> None:
        super().__init__((first,))
        self._sid = first.sid
        self._records: list[tuple[Any, ...]] = []
        # The newest packed revision's state values and their places: a field the next
        # one shares by identity (``model_copy``) is not packed again.
        self._last: dict[str, Any] | None = None
        self._idx: tuple[int, ...] = ()

    def total(self) -> int:
        """How many revisions the session has, packed and as given."""
        return len(self._records) + len(self)

    def pack_oldest(self) -> None:
        """Pack the oldest revision kept as given."""
        self._pack(self.pop(0))

    def _pack(self, revision: Revision) -> None:
        values = revision.state.__dict__
        last = self._last
        base = len(self._records) << _SHIFT
        if last is None:
            changed: list[Any] = list(values.values())
            idx = tuple(range(base, base + len(_FIELDS)))
        else:
            out = list(self._idx)
            changed = []
            for i in compress(_POSITIONS, map(is_not, values.values(), last.values())):
                out[i] = base | len(changed)
                changed.append(values[_FIELDS[i]])
            idx = tuple(out)
        self._last, self._idx = values, idx
        changed += (revision.envelope, revision.events)
        self._records.append(
            (revision.fsm, revision.skill, revision.ts, _payload(tuple(changed)), idx))

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

    def _values(self, rev: int) -> tuple[Any, ...]:
        payload = self._records[rev][3]
        values: tuple[Any, ...] = marshal.loads(payload) if type(payload) is bytes else payload
        return values

    def _build(self, rev: int, loaded: dict[int, tuple[Any, ...]] | None = None) -> Revision:
        fsm, skill, ts, _, idx = self._records[rev]
        if loaded is None:
            loaded = {}
        own = loaded.get(rev)
        if own is None:
            own = loaded[rev] = self._values(rev)
        values: list[Any] = []
        for place in idx:
            at = place >> _SHIFT
            found = loaded.get(at)
            if found is None:
                found = loaded[at] = self._values(at)
            values.append(found[place & _MASK])
        values[_SID] = self._sid
        state = _state(dict(zip(_FIELDS, values, strict=True)))
        return _revision({
            "sid": self._sid, "rev": rev, "parent_rev": rev - 1 if rev else None, "fsm": fsm,
            "skill": skill, "envelope": own[-2], "state": state, "ts": ts, "events": own[-1],
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
        # The copies share the source's field objects, so its newest packed values still
        # tell which fields the next packed revision shares.
        copy._last, copy._idx = self._last, self._idx
        return copy
