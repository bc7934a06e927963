"""A tick commits the passed deadlines of a chunk of due sessions together
(``StateStore.commit_all``): a session another writer moves between the tick's read and
its commit is refused alone and reported in ``conflicts``; the others of the batch land,
each exactly once (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from claimfsm.engine.tick import tick
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from claimfsm.testing import FixedClock
from tests.engine.test_people import T0, _due_sessions
from tests.support.pg import PgServer


def _tick_while_a_reviewer_answers(make: Callable[[], StateStore]) -> None:
    with make() as store, make() as other:
        wf, sids = _due_sessions(store, 5)
        victim = sids[2]
        reviewer = wf.driver(other, clock=FixedClock(T0 + timedelta(seconds=30)))
        read = store.heads

        def heads(chunk: list[str]) -> dict[str, Revision]:
            out = read(chunk)
            reviewer.input(victim, {"ok": True}, actor="kim")  # after the tick's read
            return out

        store.heads = heads  # type: ignore[method-assign]
        report = tick(wf.driver(store, clock=FixedClock(T0 + timedelta(seconds=61))))
        assert (report.due, report.advanced, report.skipped) == (5, 4, 1)
        assert report.conflicts == [victim] and victim not in report.sids
        for sid in sids:
            history = other.history(sid)
            timed = [r for r in history if any(e["type"] == "TimedOut" for e in r.events)]
            if sid == victim:
                assert timed == [] and history[-1].fsm == "DONE"
                assert history[-1].events[0]["type"] == "InputReceived"
            else:
                assert len(timed) == 1 and history[-1].fsm == "EXPIRED"
            assert other.verify_chain(sid).ok
        assert other.due("9999-01-01T00:00:00.000000") == []
        # The ticker's caches follow what landed: the next commits go on from there.
        assert store.head(sids[0]).fsm == "EXPIRED" and store.head(victim).fsm == "DONE"


def test_a_batch_with_a_conflict_commits_the_others_on_sqlite(tmp_path: Path) -> None:
    _tick_while_a_reviewer_answers(lambda: SQLiteStore(tmp_path / "t.db"))


def test_a_batch_with_a_conflict_commits_the_others_on_postgres(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    _tick_while_a_reviewer_answers(lambda: PostgresStore(url))
