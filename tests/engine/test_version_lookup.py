"""Reading a session's version costs one look, however long the session: a new process
(a CLI step, a batch worker, a ticker) must not walk the whole history back to revision 0
before its first step (the bench's rev10k_step_ratio caught a walk: 67x at 10,000)."""

from __future__ import annotations

from typing import Any

from claimfsm import MemoryStore
from claimfsm.bench.scale import TICK
from claimfsm.engine.version import UNKNOWN, session_version
from claimfsm.state.holds import VERSION_KEY


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get(self, sid: str, rev: int) -> Any:
        self.gets += 1
        return super().get(sid, rev)


def test_the_version_of_a_long_session_is_read_in_one_look() -> None:
    store = CountingStore()
    driver = TICK.driver(store)
    sid = driver.start("deep").sid
    for _ in range(300):
        driver.step(sid)
    head = store.head(sid)
    store.gets = 0
    assert session_version(store, head) == driver.version != UNKNOWN
    assert store.gets <= 1


def test_a_crossing_is_read_from_the_head_and_a_rewind_before_it_restores_the_old() -> None:
    store = MemoryStore()
    driver = TICK.driver(store)
    sid = driver.start("x").sid
    for _ in range(3):
        driver.step(sid)
    head = store.head(sid)
    crossed = head.model_copy(update={
        "rev": head.rev + 1, "parent_rev": head.rev,
        "state": head.state.model_copy(update={
            "runtime": {**head.state.runtime, VERSION_KEY: "feedfacefeedface"}})})
    store.commit(crossed, expected_rev=head.rev)
    assert session_version(store, store.head(sid)) == "feedfacefeedface"
    back = driver.rollback(sid, to=1)
    assert session_version(store, back) == driver.version
