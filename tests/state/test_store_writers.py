"""Writers of one SQLite file queue on its lock file: a commit waits while another holder
has it and proceeds the moment it is released; reads never ask for it; an unusable lock
file changes nothing. Nothing here depends on how fast the machine is: the tests watch
the lock being asked for instead of timing it."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from claimfsm.state.contract import make_revision
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.sqlite.writers import WriterQueue


def _spy_flock(monkeypatch: pytest.MonkeyPatch, holder: int,
               on_lock: Callable[[], None]) -> None:
    """Call ``on_lock`` whenever a descriptor other than ``holder`` asks for the writer lock
    (the queue reads ``fcntl.flock`` at each call)."""
    real = fcntl.flock

    def flock(fd: int, op: int) -> None:
        if fd != holder and op & fcntl.LOCK_EX:
            on_lock()
        real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)


def test_a_commit_waits_for_the_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "q.db"
    with SQLiteStore(db) as store:
        store.create(make_revision("a", 0))
        holder = os.open(f"{db}-writer", os.O_RDWR)
        fcntl.flock(holder, fcntl.LOCK_EX)  # another process's writer, say
        queued, done = threading.Event(), threading.Event()
        _spy_flock(monkeypatch, holder, queued.set)
        writer = threading.Thread(target=lambda: (
            store.commit(make_revision("a", 1), expected_rev=0), done.set()), daemon=True)
        writer.start()
        # No time window: once the commit has asked for the lock, it cannot go on before
        # the holder lets go, however slow or fast the machine is.
        assert queued.wait(60), "the commit never asked for the writer lock"
        with SQLiteStore(db, readonly=True) as view:
            assert view.head("a").rev == 0 and not done.is_set()
        fcntl.flock(holder, fcntl.LOCK_UN)
        assert done.wait(60)
        writer.join()
        os.close(holder)
        assert store.head("a").rev == 1


def test_reads_never_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.db"
    with SQLiteStore(db) as store:
        store.create(make_revision("a", 0))
        store.clear_cache()
        holder = os.open(f"{db}-writer", os.O_RDWR)
        fcntl.flock(holder, fcntl.LOCK_EX)
        asked: list[str] = []

        def refuse() -> None:  # fail the test where a queued read would hang it
            asked.append("read")
            raise AssertionError("a read asked for the writer lock")

        _spy_flock(monkeypatch, holder, refuse)
        with SQLiteStore(db, readonly=True) as view:
            assert view.head("a").rev == 0 and store.history("a")[0].rev == 0
            assert view.history_page("a", 0, 5).total == 1 and list(view.sessions()) == ["a"]
        assert asked == []
        os.close(holder)


def test_no_lock_file_where_none_can_be_made(tmp_path: Path) -> None:
    queue = WriterQueue(str(tmp_path / "missing" / "x.db"))
    with queue, queue:  # re-entrant, and a no-op without its file
        pass
    assert not (tmp_path / "missing").exists()
    queue.close()
