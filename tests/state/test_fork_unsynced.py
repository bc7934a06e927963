"""A fork in ``full`` durability commits without an fsync of its own: its frames become
durable with the store's next commit (whose fsync of the WAL covers every earlier
frame), a checkpoint or ``close``. What that must not change: a crash or a power cut
leaves the whole fork or none of it, the file verifies, and nothing else moves; the
connection is back at ``synchronous=FULL`` for every other commit, even after a fork
that failed."""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Literal

import pytest

from claimfsm._base.errors import ErrorCode
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.errors import RevConflict, StoreError
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision
from claimfsm.state.sqlite import SQLiteStore
from tests.state.test_store_crash import _kill_after, _spawn
from tests.support.store_worker import expected_state

_FRAME = 4096 + 24  # a WAL frame: its header and one page
_WAL_HEADER = 32


def _source(store: SQLiteStore, sid: str = "src", revisions: int = 3) -> None:
    store.create(make_revision(sid, 0))
    for rev in range(1, revisions + 1):
        state = make_state(sid, rounds=rev, memory={"n": rev})
        store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)


def _own(copy: Revision) -> Revision:
    return forked_revision(copy, "src", "2026-01-01T00:01:00Z")


def _synchronous(store: SQLiteStore) -> int:
    conn = store._conn  # the store's own writer: the level is per connection
    assert conn is not None
    level: int = conn.execute("PRAGMA synchronous").fetchone()[0]
    return level


@pytest.mark.parametrize(("durability", "level"), [("full", 2), ("normal", 1)])
def test_the_connection_keeps_its_level_after_a_fork(
        tmp_path: Path, durability: Literal["full", "normal"], level: int) -> None:
    with SQLiteStore(tmp_path / "s.db", durability=durability) as store:
        _source(store)
        assert _synchronous(store) == level
        store.fork("src", 2, "f1", then=_own)
        assert _synchronous(store) == level
        with pytest.raises(RevConflict):  # the fork's session insert fails in the transaction
            store.fork("src", 2, "f1", then=_own)
        assert _synchronous(store) == level
        # and the store goes on committing, fork and source alike
        head = store.head("f1")
        store.commit(head.model_copy(update={"rev": 4, "parent_rev": 3}), expected_rev=3)
        assert fsck(store).ok


def _copy(db: Path, wal: bytes, to: Path) -> Path:
    to.mkdir()
    shutil.copyfile(db, to / db.name)
    (to / f"{db.name}-wal").write_bytes(wal)
    return to / db.name


def _whole_or_none(path: Path, source: list[Revision], fork_revs: int) -> bool:
    """Open the copy (SQLite recovers its WAL): the source as committed, the fork whole
    or absent, fsck clean. Whether the fork is there."""
    with SQLiteStore(path) as store:
        report = fsck(store)
        assert report.ok, report.problems
        assert list(store.history("src")) == source
        if "f1" not in store.sessions():
            return False
        history = store.history("f1")
        assert [r.rev for r in history] == list(range(fork_revs))
        assert store.verify_chain("f1").ok
        assert [r.state.memory for r in history[:-1]] == [r.state.memory for r in source[:3]]
        assert store.forks("src") == [{"sid": "f1", "rev": 2, "at": "2026-01-01T00:01:00Z"}]
        return True


def test_a_power_cut_during_an_unsynced_fork_leaves_all_of_it_or_none(tmp_path: Path) -> None:
    """A power cut before the fork's frames were synced leaves any prefix of them on
    disk (the file did not grow that far), or frames with holes (pages written out of
    order): recovery keeps the fork only if its commit frame and every frame before it
    are there."""
    db = tmp_path / "s.db"
    wal = Path(f"{db}-wal")
    with SQLiteStore(db, durability="full") as store:
        _source(store)
        source = list(store.history("src"))
        before = wal.stat().st_size
        store.fork("src", 2, "f1", then=_own)
        frames = wal.read_bytes()  # read while the store is open: close checkpoints it
    after = len(frames)
    count = (after - before) // _FRAME
    assert count >= 2 and before + count * _FRAME == after, (before, after)
    rng = random.Random(27)
    cuts = sorted({before + i * _FRAME for i in range(count + 1)}
                  | {before + rng.randrange(after - before) for _ in range(6)})
    for cut in cuts:
        kept = _whole_or_none(_copy(db, frames[:cut], tmp_path / f"cut{cut}"), source, 4)
        assert kept == (cut == after), cut
    for hole in range(count):  # one frame of the fork never reached the disk
        start = before + hole * _FRAME
        torn = frames[:start] + bytes(_FRAME) + frames[start + _FRAME:]
        assert not _whole_or_none(_copy(db, torn, tmp_path / f"hole{hole}"), source, 4)
    assert _whole_or_none(_copy(db, frames, tmp_path / "all"), source, 4)


def test_the_next_commit_or_close_syncs_the_fork(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork's frames are written before it returns; ``close`` syncs them if no
    commit did (SQLite syncs the WAL at each ``full`` commit itself, out of Python's
    sight, so only ``close``'s own sync is seen here)."""
    synced: list[str] = []
    real = os.fdatasync

    def record(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", record)
    db = tmp_path / "s.db"
    with SQLiteStore(db, durability="full") as store:
        _source(store)
    assert synced == []  # no fork: nothing of ours to sync
    with SQLiteStore(db, durability="full") as store:
        assert not Path(f"{db}-wal").exists()  # closed clean: checkpointed, WAL gone
        store.fork("src", 2, "f1", then=_own)
        assert Path(f"{db}-wal").stat().st_size > 0  # written, not only buffered
    assert synced == [f"{db}-wal"]
    with SQLiteStore(db, durability="full") as store:
        assert [r.rev for r in store.history("f1")] == [0, 1, 2, 3]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_while_forking_leaves_every_reported_fork_whole(tmp_path: Path) -> None:
    db = str(tmp_path / "forks.db")
    rng = random.Random(2027)
    reported: set[str] = set()
    for _ in range(6):
        proc = _spawn("forks", db, "full")
        reported.update(f"f{n}" for n in _kill_after(proc, rng.randint(1, 25),
                                                    rng.choice((0.0, 0.0005, 0.003))))
        with SQLiteStore(db) as store:
            report = fsck(store)
            assert report.ok, report.problems
            names = set(store.sessions()) - {"src"}
            assert reported <= names  # a fork that returned survives the kill
            for sid in names:  # and each one there, reported or not, is whole
                history = store.history(sid)
                assert [r.rev for r in history] == [0, 1, 2, 3, 4]
                assert [r.state for r in history[:4]] == [
                    expected_state("src", r).model_copy(update={"sid": sid})
                    for r in range(4)]
            listed = {f["sid"] for f in store.forks("src", limit=1000)}
            assert listed == names
    assert len(reported) > 6


def test_a_failed_sync_at_close_is_store_io_and_still_closes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "s.db", durability="full")
    _source(store)
    store.fork("src", 2, "f1", then=_own)
    conn = store._conn
    assert conn is not None

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    with pytest.raises(StoreError) as caught:
        store.close()
    assert caught.value.code == ErrorCode.STORE_IO and caught.value.field == "db"
    with pytest.raises(sqlite3.ProgrammingError):  # the connection was closed anyway
        conn.execute("SELECT 1")
    store.close()  # idempotent: nothing more to sync or close
