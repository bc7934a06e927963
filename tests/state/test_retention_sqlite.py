"""Erasure on a SQLite file: the deleted session's text leaves the file and its
write-ahead log at ``compact`` (searched in the bytes), shared blobs stay, a failed
delete changes nothing, a file from before deletions opens and verifies, and a prune
killed half-way leaves a consistent store that the next prune finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from claimfsm.state.catalog import SummaryQuery
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import UnknownSession
from claimfsm.state.fsck import fsck
from claimfsm.state.retention import parse_cutoff, prune
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite import erase as erase_module

ROOT = Path(__file__).resolve().parents[2]
AT = "2026-11-25T12:00:00+00:00"
SHARED = "A page both sessions quote, long enough to be a blob of its own. " * 8
SECRET = "Xylophonequartz"  # in the deleted session only


def _session(store: SQLiteStore, sid: str, claim: str, text: str) -> None:
    state = make_state(sid, claim=claim, pages={"https://example.org/shared": {"text": SHARED},
                                                "https://example.org/own": {"text": text}})
    store.create(make_revision(sid, 0, state))
    state = state.model_copy(update={"fsm": "RETRIEVAL", "memory": {"note": claim}})
    events = [{"type": "ToolCalls", "query": claim}]
    store.commit(make_revision(sid, 1, state, events=events), expected_rev=0)
    store.commit(make_revision(sid, 2, state.model_copy(update={"fsm": "DONE"})), expected_rev=1)


def _bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def test_compact_removes_every_byte_of_a_deleted_session(tmp_path: Path) -> None:
    db = tmp_path / "erase.db"
    secret_page = f"{SECRET} page text, unique to the deleted session. " * 6  # a raw blob
    with SQLiteStore(db) as store:
        _session(store, "keep", "Glaciers are retreating.", "kept page " * 40)
        store.fork("keep", 1, "keep-fork")
        _session(store, "gone", f"{SECRET} claims the sea is rising.", secret_page)
        store.summaries(SummaryQuery())  # the catalog holds the claim in plain text
        assert SECRET.encode() in _bytes(db)  # else this test could not fail
        kept = {sid: store.history(sid) for sid in ("keep", "keep-fork")}
        store.delete("gone", actor="alice", at=AT)
        assert SECRET.encode() in _bytes(db)  # free pages and the log still hold it
        report = store.compact()
        assert report.skipped == []
        # Checked while the store is still open (a running server), then after closing.
        assert SECRET.encode() not in _bytes(db)
        assert SHARED[:40].encode() in _bytes(db)  # the shared page stays
    assert SECRET.encode() not in _bytes(db)
    with SQLiteStore(db) as store:
        assert fsck(store).ok and [t.sid for t in fsck(store).deleted] == ["gone"]
        for sid, history in kept.items():
            assert store.history(sid) == history
        again = store.compact()
        assert again.blobs_dropped == 0  # nothing left to reclaim


def test_a_delete_that_fails_half_way_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "atomic.db"
    with SQLiteStore(db) as store:
        _session(store, "a", "First claim.", "page a " * 40)
        before = store.history("a")

        def broken(conn: object) -> int:
            raise OSError("disk went away during the blob sweep")

        monkeypatch.setattr(erase_module, "prune_blobs", broken)
        with pytest.raises(OSError):
            store.delete("a", actor="alice", at=AT)
    with SQLiteStore(db) as store:
        assert store.history("a") == before and list(store.tombstones()) == []
        assert fsck(store).ok


def test_a_file_from_before_deletions_opens_verifies_and_upgrades(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    db = tmp_path / "old.db"
    with SQLiteStore(db) as store:
        _session(store, "a", "First claim.", "page a " * 40)
        _session(store, "b", "Second claim.", "page b " * 40)
    with closing(sqlite3.connect(db)) as conn, conn:  # as the previous release wrote it
        conn.execute("DROP TABLE st_tombstones")
    with SQLiteStore(db, readonly=True) as view:
        assert list(view.tombstones()) == [] and fsck(view).ok
        with pytest.raises(Exception, match="read-only"):
            view.delete("a", actor="alice", at=AT)
    with SQLiteStore(db) as store:
        assert fsck(store).ok and list(store.sessions()) == ["a", "b"]
        store.delete("a", actor="alice", at=AT)
        assert [t.sid for t in store.tombstones()] == ["a"]
        with pytest.raises(UnknownSession):
            store.head("a")
    with SQLiteStore(db, readonly=True) as view:
        report = fsck(view)
        assert report.ok and report.sessions == 1 and [t.sid for t in report.deleted] == ["a"]


_PRUNER = """
import sys
from datetime import datetime, UTC
from claimfsm.state.retention import prune
from claimfsm.state.sqlite import SQLiteStore

with SQLiteStore(sys.argv[1]) as store:
    prune(store, datetime(2100, 1, 1, tzinfo=UTC), actor="cron", at="2026-11-25T00:00:00Z",
          batch=20, progress=lambda done, total: print(done, flush=True))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_prune_killed_half_way_leaves_a_consistent_store(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    total = 1500
    with SQLiteStore(db) as store:
        for i in range(total):
            sid = f"s{i:04d}"
            state = make_state(sid, claim=f"claim {i}", memory={"text": f"unique text {i} " * 30})
            store.create(make_revision(sid, 0, state))
            store.commit(make_revision(sid, 1, state.model_copy(update={"fsm": "DONE"})),
                         expected_rev=0)
        _session(store, "running", "Still running.", "page " * 60)
        store.commit(make_revision("running", 3, make_state("running", fsm="VERIFY")),
                     expected_rev=2)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", _PRUNER, str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    reported = [int(proc.stdout.readline()) for _ in range(5)]  # five batches committed
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and reported[-1] == 100
    with SQLiteStore(db) as store:
        report = fsck(store)
        assert report.ok, report.problems
        live, deleted = list(store.sessions()), [t.sid for t in report.deleted]
        assert 100 <= len(deleted) < total and len(deleted) % 20 == 0  # whole batches only
        assert sorted(live + deleted) == sorted([f"s{i:04d}" for i in range(total)] + ["running"])
        for sid in live[:50]:
            assert [r.rev for r in store.history(sid)] == list(range(len(store.history(sid))))
        finished = prune(store, parse_cutoff("2100-01-01"), actor="cron", at=AT)
        assert finished.deleted == total - len(deleted) and finished.skipped == {}
        assert list(store.sessions()) == ["running"] and fsck(store).ok
        stats = store.stats()
        # 1,500 blobs before (one per session), the killed run's orphans included: swept.
        assert stats["revisions"] == 4 and stats["blobs"] < 10
        store.compact()
        assert store.history("running")[-1].fsm == "VERIFY"
