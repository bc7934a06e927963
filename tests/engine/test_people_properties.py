"""Property: any interleaving of step, input, edit, resume, tick, rollback and fork on a
session keeps one linear history (SQLite and PostgreSQL): every operation that succeeds
adds exactly one revision, one that is refused adds none, every chain verifies and fsck
is clean."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from claimfsm import define_machine, skill, wait
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.tick import tick
from claimfsm.state.fsck import fsck
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore
from claimfsm.testing import FixedClock
from tests.support.pg import PgServer

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
OPS = ("step", "input", "bad_input", "stale_input", "edit", "resume", "tick", "rollback",
       "fork")


class Answer(BaseModel):
    ok: bool


@skill()
def work(inp, ctx):  # type: ignore[no-untyped-def]
    return inp.ok("ASK", n=inp.memory.get("n", 0) + 1)


WF = define_machine(
    "props",
    states={"WORK": work,
            "ASK": wait(Answer, timeout=30, on_timeout="WORK",
                        route=lambda a: "DONE" if a.ok else "WORK", moves=("DONE", "WORK")),
            "DONE": None},
    transitions=[("WORK", "ASK"), ("ASK", "DONE"), ("ASK", "WORK")],
    editable=("memory.*",))

_ids = itertools.count()


def _apply(store: StateStore, ops: list[tuple[str, int]]) -> None:
    clock = FixedClock(T0)
    d = WF.driver(store, clock=clock, new_sid=lambda: f"p{next(_ids)}")
    sids = [d.start("c", config={"pause_before": ["WORK"]}).sid]
    expected = {sids[0]: 1}
    for name, k in ops:
        sid = sids[k % len(sids)]
        head = store.head(sid)
        before = head.rev
        added = 0
        try:
            if name == "step":
                added = int(d.step(sid).committed)
            elif name == "input":
                d.input(sid, {"ok": k % 3 == 0}, actor=f"a{k}", expected_rev=head.rev)
                added = 1
            elif name == "bad_input":
                d.input(sid, {"ok": "maybe"}, actor="a")
            elif name == "stale_input":
                d.input(sid, {"ok": True}, actor="a", expected_rev=head.rev + 1)
            elif name == "edit":
                d.edit(sid, [("memory.note", k)], actor="ed", expected_rev=head.rev)
                added = 1
            elif name == "resume":
                d.resume(sid, actor="r")
                added = 1
            elif name == "tick":
                clock.advance(timedelta(seconds=k % 50))
                advanced = tick(d, run=False).sids
                added = int(sid in advanced)
                for other in advanced:  # a tick advances every due session, each once
                    if other != sid and other in expected:  # (earlier examples' too)
                        expected[other] += 1
            elif name == "rollback":
                d.rollback(sid, k % (head.rev + 1))
                added = 1
            else:
                fork = d.fork(sid, k % (head.rev + 1))
                sids.append(fork.sid)
                expected[fork.sid] = fork.rev + 1
        except ClaimFsmError:
            added = 0
        expected[sid] = before + 1 + added
        for s in sids:
            history = store.history(s)
            assert len(history) == expected[s], (name, s)
            assert [r.rev for r in history] == list(range(len(history)))
            assert store.verify_chain(s).ok
        inputs = [r for r in store.history(sid)
                  if any(e["type"] == "InputReceived" for e in r.events)]
        assert len({r.rev for r in inputs}) == len(inputs)  # nothing applied twice


ops = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 1000)), max_size=25)
_settings = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings(_settings, max_examples=40, deadline=None)
@given(ops=ops)
def test_interleavings_keep_one_linear_history_on_sqlite(tmp_path: Path,
                                                          ops: list[tuple[str, int]]) -> None:
    with SQLiteStore(tmp_path / "props.db") as store:
        _apply(store, ops)
        assert fsck(store).ok


@settings(_settings, max_examples=15, deadline=None)
@given(ops=ops)
def test_interleavings_keep_one_linear_history_on_postgres(
        pg_server: PgServer, ops: list[tuple[str, int]]) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = _schema(pg_server)
    with PostgresStore(url) as store:
        _apply(store, ops)
        assert all(store.verify_chain(s).ok for s in store.sessions())


_schemas: dict[int, str] = {}


def _schema(pg_server: PgServer) -> str:
    # One schema for the whole property run: each example starts sessions of its own.
    if id(pg_server) not in _schemas:
        _schemas[id(pg_server)] = pg_server.new_schema()
    return _schemas[id(pg_server)]
