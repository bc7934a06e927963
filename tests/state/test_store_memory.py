"""MemoryStore: the store contract, plus thread safety of compare-and-set."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from claimfsm.state.contract import StoreContract, make_revision, make_state
from claimfsm.state.errors import RevConflict
from claimfsm.state.memory import MemoryStore
from claimfsm.state.store import StateStore


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[StateStore]:
        with MemoryStore() as store:
            yield store


def test_threads_racing_on_one_session_commit_each_revision_once() -> None:
    store = MemoryStore()
    store.create(make_revision("s", 0))
    wins: dict[int, list[int]] = {}
    conflicts = [0] * 4
    barrier = threading.Barrier(4)

    def worker(me: int) -> None:
        barrier.wait()
        while True:
            head = store.head("s")
            if head.rev >= 200:
                return
            rev = head.rev + 1
            state = make_state("s", memory={"writer": me})
            try:
                store.commit(make_revision("s", rev, state), expected_rev=head.rev)
            except RevConflict:
                conflicts[me] += 1
                continue
            wins.setdefault(rev, []).append(me)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = store.history("s")
    assert [r.rev for r in history] == list(range(201))
    assert sorted(wins) == list(range(1, 201))
    assert all(len(w) == 1 for w in wins.values())
    for rev, (writer,) in wins.items():
        assert history[rev].state.memory == {"writer": writer}


def test_history_is_a_snapshot_not_a_live_view() -> None:
    store = MemoryStore()
    store.create(make_revision("s", 0))
    before = store.history("s")
    store.commit(make_revision("s", 1), expected_rev=0)
    assert len(before) == 1 and len(store.history("s")) == 2
