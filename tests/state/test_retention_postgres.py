"""Erasure on PostgreSQL: after ``compact`` the deleted session's text is in no table file
of the cluster (the tables are rewritten), forks and shared blobs stay, a database from
before deletions opens read-only and gets its tombstone table on the first writable
open, and a worker's commit to a session deleted under it fails cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import UnknownSession
from claimfsm.state.fsck import fsck
from tests.support.pg import PgServer

ROOT = Path(__file__).resolve().parents[2]
AT = "2026-11-25T12:00:00+00:00"
SECRET = "Zygomorphicquill"
SHARED = "A page both sessions quote, long enough to be a blob of its own. " * 8


def _session(store: object, sid: str, claim: str, text: str) -> None:
    state = make_state(sid, claim=claim, pages={"https://example.org/shared": {"text": SHARED},
                                                "https://example.org/own": {"text": text}})
    store.create(make_revision(sid, 0, state))  # type: ignore[attr-defined]
    state = state.model_copy(update={"fsm": "DONE", "memory": {"note": claim}})
    store.commit(make_revision(sid, 1, state), expected_rev=0)  # type: ignore[attr-defined]


def _in_table_files(server: PgServer, needle: bytes) -> bool:
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # every page on disk (dropped files unlinked too)
    return any(needle in p.read_bytes() for p in (server.data / "base").rglob("*")
               if p.is_file())


def test_compact_rewrites_the_tables_without_the_deleted_session(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _session(store, "keep", "Glaciers are retreating.", "kept page " * 40)
        store.fork("keep", 1, "keep-fork")
        _session(store, "gone", f"{SECRET} claims the sea is rising.",
                 f"{SECRET} page text, only in the deleted session. " * 6)
        kept = {sid: store.history(sid) for sid in ("keep", "keep-fork")}
        assert _in_table_files(pg_server, SECRET.encode())  # else this could not fail
        last = store.revision_hash("gone", 1)
        stone = store.delete("gone", actor="alice", at=AT)
        assert stone.last_hash == last and stone.head == 1
        store.compact()
        assert not _in_table_files(pg_server, SECRET.encode())
    with PostgresStore(url) as store:
        report = fsck(store)
        assert report.ok and [t.sid for t in report.deleted] == ["gone"]
        for sid, history in kept.items():
            assert store.history(sid) == history


def test_a_database_from_before_deletions(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        _session(store, "a", "First.", "page a " * 40)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE st_tombstones")
    with PostgresStore(url, create=False) as view:
        assert list(view.tombstones()) == [] and fsck(view).ok
    with PostgresStore(url) as store:
        store.delete("a", actor="alice", at=AT)
        assert [t.sid for t in store.tombstones()] == ["a"] and list(store.sessions()) == []


def test_a_workers_commit_to_a_deleted_session_fails(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as worker, PostgresStore(url) as admin:
        state = make_state("s")
        worker.create(make_revision("s", 0, state))
        admin.delete("s", actor="alice", at=AT)
        with pytest.raises(UnknownSession):
            worker.commit(make_revision("s", 1, state.model_copy(update={"rounds": 1})),
                          expected_rev=0)
        assert list(admin.sessions()) == [] and fsck(admin).ok



_PRUNER = """
import sys
from datetime import datetime, UTC
from claimfsm.state.retention import prune
from claimfsm.state.postgres import PostgresStore

with PostgresStore(sys.argv[1]) as store:
    prune(store, datetime(2100, 1, 1, tzinfo=UTC), actor="cron", at="2026-11-25T00:00:00Z",
          batch=20, progress=lambda done, total: print(done, flush=True))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_prune_killed_half_way_leaves_a_consistent_database(pg_server: PgServer) -> None:
    from claimfsm.state.postgres import PostgresStore
    from claimfsm.state.retention import parse_cutoff, prune

    url = pg_server.new_schema()
    total = 600
    with PostgresStore(url) as store:
        for i in range(total):
            sid = f"s{i:04d}"
            state = make_state(sid, claim=f"claim {i}", memory={"text": f"unique text {i} " * 30})
            store.create(make_revision(sid, 0, state))
            store.commit(make_revision(sid, 1, state.model_copy(update={"fsm": "DONE"})),
                         expected_rev=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _PRUNER, url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    reported = [int(proc.stdout.readline()) for _ in range(5)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and reported[-1] == 100
    with PostgresStore(url) as store:
        report = fsck(store)
        assert report.ok, report.problems
        live, deleted = list(store.sessions()), [t.sid for t in report.deleted]
        assert 100 <= len(deleted) < total and len(deleted) % 20 == 0  # whole batches only
        assert sorted(live + deleted) == [f"s{i:04d}" for i in range(total)]
        finished = prune(store, parse_cutoff("2100-01-01"), actor="cron", at=AT)
        assert finished.deleted == total - len(deleted)
        assert list(store.sessions()) == [] and fsck(store).ok
        assert store.stats()["blobs"] == 0  # the killed run's orphans swept too
