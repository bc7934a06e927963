"""``st_answers`` on every backend: an answer saved is loaded in its scope, survives a
new connection (another process), and is dropped when the session moves to another
scope or grows old."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from claimfsm.state import answers as answers_mod
from claimfsm.state.answers import Answers, MemoryAnswers, open_answers


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str | None, bool]]:
    if request.param == "memory":
        yield None, False
    elif request.param == "sqlite":
        yield str(tmp_path / "a.db"), False
    else:
        yield request.getfixturevalue("pg_url"), True


def test_answers_load_in_their_scope_and_drop_with_the_next(
        where: tuple[str | None, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    store, url = where
    first = open_answers(store, url=url)
    memory = isinstance(first, MemoryAnswers)
    try:
        assert first.load("S", "3") == {}
        first.save("S", "3", "t1/1/search/ab", b'{"ok": true}')
        first.save("S", "3", "t2/1/search/cd", b'{"code": "HTTP_TIMEOUT"}')
        first.save("T", "9", "t1/1/search/ab", b"other session")
        again: Answers = first if memory else open_answers(store, url=url)
        try:  # what a new process opening the same place finds
            assert again.load("S", "3") == {"t1/1/search/ab": b'{"ok": true}',
                                             "t2/1/search/cd": b'{"code": "HTTP_TIMEOUT"}'}
            assert again.load("S", "4") == {}  # the next step's scope ...
            assert again.load("S", "3") == {}  # ... dropped the last one's
            assert again.load("T", "9") == {"t1/1/search/ab": b"other session"}
            if not memory:  # rows older than KEEP_S go, whatever their session
                monkeypatch.setattr(answers_mod, "KEEP_S", -1.0)
                time.sleep(0.01)
                assert again.load("U", "1") == {} and again.load("T", "9") == {}
        finally:
            if again is not first:
                again.close()
    finally:
        first.close()



@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_deleting_a_session_drops_its_saved_answers(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A deleted session's saved answers hold its queries: they go with it, and another
    session's stay."""
    from claimfsm import Engine, EngineConfig
    from claimfsm.skills.context import FixedClock

    url = backend == "postgres"
    db = request.getfixturevalue("pg_url") if url else str(tmp_path / "s.db")
    with Engine.open(db, config=EngineConfig(clock=FixedClock())) as eng:
        gone = eng.driver.start("Water boils at 100 degrees.").sid
        kept = eng.driver.start("The Moon orbits the Earth.").sid
        saved = open_answers(db, url=url)
        try:
            saved.save(gone, "1", "t1/1/search/ab", b'{"q": "water boils"}')
            saved.save(kept, "1", "t1/1/search/ab", b'{"q": "moon orbits"}')
            report = eng.store.erase({gone: None}, actor="t", at="2026-11-26T00:00:00Z")
            assert [stone.sid for stone in report.tombstones] == [gone]
            assert saved.load(gone, "1") == {}
            assert saved.load(kept, "1") == {"t1/1/search/ab": b'{"q": "moon orbits"}'}
        finally:
            saved.close()
