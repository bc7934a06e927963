"""The memory store's older revisions, packed out of the cyclic collector's reach in
batches, read back exactly as committed: equal, of the same types at every depth, in the
same key order, whatever a revision holds (values ``marshal`` writes, values it refuses,
batches mixing both); forks and pages across the packed/live boundary."""

from __future__ import annotations

import datetime
import enum
import gc
from typing import Any

import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import RetryState, Revision
from claimfsm.state.retained import BATCH, LIVE

N = LIVE + 3 * BATCH + 5


class Colour(enum.Enum):
    RED = 1


class Name(str):
    pass


def _exact(a: Any, b: Any, where: str = "") -> None:
    """``a`` and ``b`` alike: same type at every depth, same dict key order, equal
    leaves (NaN included)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            _exact(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _exact(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert b != b, where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"
        if isinstance(a, float):
            assert str(a) == str(b), where  # -0.0 stays -0.0


def _same_revision(got: Revision, want: Revision) -> None:
    for name in Revision.model_fields:
        if name != "state":
            _exact(getattr(got, name), getattr(want, name), name)
    for name, value in want.state.__dict__.items():
        _exact(got.state.__dict__[name], value, f"state.{name}")


def _odd_value(rev: int) -> Any:
    """Values of every kind a skill or binding might leave in a state or an envelope."""
    return [
        {"log": [f"note {i}" for i in range(rev)], "n": rev, "f": -0.0, "nan": float("nan")},
        (rev, "tuple", (1, [2, {"x": None}])),
        {1: "int key", (2, 3): "tuple key", None: {"set": {1, 2}, "fs": frozenset({3})}},
        b"\x00bytes", bytearray(b"ba"), 2**80, 1.5e300, True,
        Name("a str subclass"), Colour.RED, datetime.datetime(2026, 1, 1, rev % 24),
    ]


def _plain_value(rev: int) -> Any:
    """Values ``marshal`` writes exactly: what most sessions hold."""
    return [{"log": [f"note {i}" for i in range(rev)], "n": rev, "f": -0.0,
             "nan": float("nan")}, (rev, "tuple", (1, [2, {"x": None}])),
            {1: "int key", (2, 3): "tuple key", None: {"set": {1, 2}, "fs": frozenset({3})}},
            b"\x00bytes", bytearray(b"ba"), 2**80, 1.5e300, True]


# Which revisions hold values marshal refuses: all, none, or one in eleven (so some
# batches are written whole and others revision by revision).
KINDS = {"odd": lambda rev: True, "plain": lambda rev: False, "mixed": lambda rev: rev % 11 == 0}


def _session(store: MemoryStore, sid: str, n: int = N, kind: str = "odd") -> list[Revision]:
    """``n`` revisions of ``sid``, each changing some fields and sharing the others with
    its parent (as the driver's ``model_copy`` does)."""
    odd = KINDS[kind]
    first = make_revision(sid, 0, make_state(sid, config={"k": [1, 2]}))
    store.create(first)
    made = [first]
    for rev in range(1, n):
        parent = made[-1]
        update: dict[str, Any] = {"fsm": f"S{rev % 3}", "entry_rev": rev,
                                  "memory": {"rev": rev, "odd": _odd_value(rev) if odd(rev)
                                             else _plain_value(rev)}}
        if rev % 4 == 0:
            update["retry"] = RetryState(state="VERIFY", attempts=rev)
        if rev % 5 == 0:
            update["steps"] = [*parent.state.steps, {"n": rev, "t": (rev, rev)}]
        state = parent.state.model_copy(update=update)
        shared = update["memory"]["odd"]
        envelope = None if rev % 7 == 0 else {"s": "ok", "d": {"odd": shared, "sp": {"rev": rev}}}
        events = [{"type": "E", "at": datetime.date(2026, 1, 1)}] if rev % 3 == 0 else []
        made.append(store.commit(make_revision(sid, rev, state, envelope=envelope,
                                               events=events), expected_rev=rev - 1))
    return made


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_revision_reads_back_exactly_as_committed(kind: str) -> None:
    store = MemoryStore()
    made = _session(store, "s", kind=kind)
    for rev, want in enumerate(made):
        _same_revision(store.get("s", rev), want)
    for got, want in zip(store.history("s"), made, strict=True):
        _same_revision(got, want)
    assert store.head("s") is made[-1]  # the head (and the newest few) as given


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_pages_across_the_packed_and_live_revisions(kind: str) -> None:
    store = MemoryStore()
    made = _session(store, "s", kind=kind)
    for start in range(0, N, 5):
        for limit in (1, 3, LIVE, N):
            page = store.history_page("s", start, limit)
            assert [r.rev for r in page.items] == list(range(start, min(start + limit, N)))
            for got in page.items:
                _same_revision(got, made[got.rev])


@pytest.mark.parametrize("kind", ["mixed", "plain"])
@pytest.mark.parametrize("at", [0, 1, LIVE, BATCH, N - LIVE - 1, N - LIVE, N - 2, N - 1])
def test_a_fork_at_a_packed_or_live_revision_reads_back_and_grows(at: int, kind: str) -> None:
    store = MemoryStore()
    made = _session(store, "s", kind=kind)
    head = store.fork("s", at, "f")
    assert head.sid == head.state.sid == "f" and head.rev == at
    for rev in range(at + 1):
        want = made[rev].model_copy(update={
            "sid": "f", "state": made[rev].state.model_copy(update={"sid": "f"})})
        _same_revision(store.get("f", rev), want)
    grown = [head]
    for rev in range(at + 1, at + LIVE + 2 * BATCH + 3):
        state = grown[-1].state.model_copy(update={"memory": {"fork": [rev, (rev,)]}})
        grown.append(store.commit(make_revision("f", rev, state), expected_rev=rev - 1))
    for got in grown:
        _same_revision(store.get("f", got.rev), got)
    for rev, want in enumerate(made):  # the source is untouched
        _same_revision(store.get("s", rev), want)


@pytest.mark.parametrize("kind", ["odd", "plain"])
def test_a_read_packed_revision_is_a_copy_of_its_own(kind: str) -> None:
    store = MemoryStore()
    made = _session(store, "s", kind=kind)
    got = store.get("s", 2)
    got.state.memory["odd"][0]["log"].append("changed")
    got.envelope["d"]["odd"].clear()  # type: ignore[index]
    _same_revision(store.get("s", 2), made[2])


def test_packed_revisions_leave_the_collector_little_to_walk() -> None:
    # Plain JSON-like values, as most sessions hold: what a long session keeps beyond
    # its newest revisions must not grow the containers the collector walks.
    store = MemoryStore()
    sid = "plain"
    made = [store.create(make_revision(sid, 0))]

    def grow(n: int) -> None:
        for _ in range(n):
            parent = made[-1]
            rev = parent.rev + 1
            log = [*parent.state.memory.get("log", ()), f"step {rev}"]
            state = parent.state.model_copy(update={"fsm": f"S{rev}",
                                                    "memory": {"rev": rev, "log": log}})
            envelope = {"s": "ok", "d": {"rev": rev, "log": log, "sp": {"rev": rev}}}
            made.append(store.commit(make_revision(sid, rev, state, envelope=envelope),
                                     expected_rev=rev - 1))

    grow(2 * LIVE)
    made[:-1] = [None] * (len(made) - 1)  # type: ignore[list-item]  # only the store keeps them
    gc.collect()
    before = len(gc.get_objects())
    grow(200)
    made[:-1] = [None] * (len(made) - 1)  # type: ignore[list-item]
    gc.collect()
    # Kept as given, each revision adds ~10 containers (the revision, its state, their
    # dicts, the memory, the log, the envelope...): ~2,000 here.
    assert len(gc.get_objects()) - before < 100
    assert store.get(sid, 100).state.memory["log"][-1] == "step 100"
