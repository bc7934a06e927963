"""The tick benchmark's machinery on a small store (the figures themselves come from
``make bench-tick``): it builds waiting sessions of which some are due, one tick
advances exactly those, an idle tick finds none, and sessions that never pause replay
with identical hashes and no timer rows."""

from __future__ import annotations

from pathlib import Path

from claimfsm.bench.tick import build, measure, zero_bytes
from claimfsm.state.sqlite.store import SQLiteStore
from tests.support.pg import PgServer


def test_a_tick_advances_the_due_sessions_only(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        build(store, 60, 7, threads=2)
        figures = measure(store, 7)
        assert (figures["due_found"], figures["advanced"], figures["idle_due"]) == (7, 7, 0)
        ends = [store.head(s).fsm for s in store.sessions()]
        assert ends.count("EXPIRED") == 7 and ends.count("ASK") == 53


def test_each_run_advances_the_next_group_of_due_sessions(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        build(store, 60, 7, runs=3)
        figures = measure(store, 7, runs=3)
        assert [t["advanced"] for t in figures["ticks"]] == [7, 7, 7]
        assert figures["idle_due"] == 0
        ends = [store.head(s).fsm for s in store.sessions()]
        assert ends.count("EXPIRED") == 21 and ends.count("ASK") == 39


def test_a_postgres_tick_commits_a_chunk_in_one_round_trip(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    with PostgresStore(pg_server.new_schema()) as store:
        build(store, 300, 150, runs=2)
        figures = measure(store, 150, runs=2)
        # 150 due: two chunks (100 and 50), each one pipelined transaction.
        assert [(t["advanced"], t["commit_statements"], t["commit_round_trips"])
                for t in figures["ticks"]] == [(150, 150, 2), (150, 150, 2)]


def test_sessions_that_never_pause_store_no_more(tmp_path: Path) -> None:
    figures = zero_bytes(tmp_path)
    assert figures["records"] >= 5 and figures["hash_identical"] == figures["records"]
    assert figures["timer_rows"] == 0 and figures["bytes_added_per_step"] == 0
