"""Writers of one SQLite file queue on its lock file: a commit waits while another holder
has it and proceeds the moment it is released; an unusable lock file changes nothing."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from claimfsm.state.contract import make_revision
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.sqlite.writers import WriterQueue


def test_a_commit_waits_for_the_queue(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    with SQLiteStore(db) as store:
        store.create(make_revision("a", 0))
        holder = os.open(f"{db}-writer", os.O_RDWR)
        fcntl.flock(holder, fcntl.LOCK_EX)  # another process's writer, say
        done = threading.Event()
        threading.Thread(target=lambda: (store.commit(make_revision("a", 1), expected_rev=0),
                                         done.set()), daemon=True).start()
        assert not done.wait(0.3), "the commit went ahead of the queue"
        fcntl.flock(holder, fcntl.LOCK_UN)
        assert done.wait(10)
        os.close(holder)
        assert store.head("a").rev == 1


def test_reads_never_queue(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with SQLiteStore(db) as store:
        store.create(make_revision("a", 0))
        holder = os.open(f"{db}-writer", os.O_RDWR)
        fcntl.flock(holder, fcntl.LOCK_EX)
        start = time.monotonic()
        with SQLiteStore(db, readonly=True) as view:
            assert view.head("a").rev == 0 and store.history("a")[0].rev == 0
        assert time.monotonic() - start < 5
        os.close(holder)


def test_no_lock_file_where_none_can_be_made(tmp_path: Path) -> None:
    queue = WriterQueue(str(tmp_path / "missing" / "x.db"))
    with queue, queue:  # re-entrant, and a no-op without its file
        pass
    assert not (tmp_path / "missing").exists()
    queue.close()
