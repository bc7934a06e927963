"""A read-only store, and the probe, write no byte of any file and read what the WAL
holds: a clean file, a killed writer's WAL and -shm, a WAL copied without its -shm, a
checkpoint a full disk cut short, and a writer that starts under the reader."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from claimfsm._base.sqlite_read import ReadOnlyLink
from claimfsm.state.contract import make_revision
from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.probe import probe

Snapshot = dict[str, tuple[int, int, str]]


def snapshot(folder: Path) -> Snapshot:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns,
                     hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.iterdir())}


# Commits sessions s1..sN in a child that dies without closing: its WAL keeps them.
_KILLED = """
import os, sys
from claimfsm.state.contract import make_revision
from claimfsm.state.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
for n in range(int(sys.argv[2]), int(sys.argv[3])):
    store.create(make_revision(f"s{n}", 0))
os._exit(0)
"""


def _killed_writer(db: Path, first: int, last: int) -> None:
    subprocess.run([sys.executable, "-c", _KILLED, str(db), str(first), str(last)],
                   check=True)


def _store(folder: Path, layout: str) -> Path:
    """``clean``: one closed file with s0..s4; ``killed``: s5..s59 more in a killed
    writer's WAL (and -shm); ``wal-only``: the same without the -shm."""
    db = folder / "s.db"
    with SQLiteStore(db) as store:
        for n in range(5):
            store.create(make_revision(f"s{n}", 0))
    if layout != "clean":
        _killed_writer(db, 5, 60)
        (folder / "s.db-writer").unlink()
        if layout == "wal-only":
            (folder / "s.db-shm").unlink()
    return db


def _cut_checkpoint_short(db: Path) -> None:
    """What a checkpoint that hit ENOSPC leaves: the WAL's newest page 1 (the header
    counting pages that never reached the main file, the schema pointing at them)
    written over the main file's, the rest not."""
    wal = (db.parent / f"{db.name}-wal").read_bytes()
    page = struct.unpack(">I", wal[8:12])[0]
    newest = None
    for at in range(32, len(wal) - 24 - page + 1, 24 + page):
        if struct.unpack(">I", wal[at:at + 4])[0] == 1:
            newest = wal[at + 24:at + 24 + page]
    assert newest is not None
    with open(db, "r+b") as fh:
        fh.write(newest)


@pytest.mark.parametrize("layout", ["clean", "killed", "wal-only"])
def test_a_read_only_store_reads_everything_and_writes_nothing(
        tmp_path: Path, layout: str) -> None:
    db = _store(tmp_path, layout)
    before = snapshot(tmp_path)
    assert probe(db) == "claimfsm"
    with SQLiteStore(db, readonly=True) as store:
        sids = list(store.sessions())
        assert len(sids) == (5 if layout == "clean" else 60)
        assert all(store.head(sid).rev == 0 for sid in sids)
        assert all(store.verify_chain(sid).ok for sid in sids)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("layout", ["killed", "wal-only"])
def test_a_checkpoint_cut_short_is_read_through_the_wal_not_called_damage(
        tmp_path: Path, layout: str) -> None:
    db = _store(tmp_path, layout)
    _cut_checkpoint_short(db)
    before = snapshot(tmp_path)
    assert probe(db) == "claimfsm"  # was STORE_NOT_DATABASE: the main file read alone
    with SQLiteStore(db, readonly=True) as store:
        assert len(store.sessions()) == 60 and store.head("s59").rev == 0
    assert snapshot(tmp_path) == before
    with SQLiteStore(db) as store:  # a writer finishes the checkpoint (space permitting)
        store.create(make_revision("after", 0))
    with SQLiteStore(db, readonly=True) as store:
        assert len(store.sessions()) == 61 and all(
            store.verify_chain(sid).ok for sid in store.sessions())


def test_a_reader_follows_a_writer_that_starts_under_it(tmp_path: Path) -> None:
    db = _store(tmp_path, "clean")
    with SQLiteStore(db, readonly=True) as reader:
        assert reader._link is not None and reader._link.mode == "main"
        assert len(reader.sessions()) == 5
        with SQLiteStore(db) as writer:  # writes, checkpoints and deletes its WAL on close
            writer.create(make_revision("new", 0))
        assert len(reader.sessions()) == 6 and reader.head("new").rev == 0


def test_a_reader_of_an_empty_wal_follows_a_writer_that_fills_it(tmp_path: Path) -> None:
    db = _store(tmp_path, "clean")
    (tmp_path / "s.db-wal").write_bytes(b"")  # an empty WAL and no -shm: read alone
    with SQLiteStore(db, readonly=True) as reader:
        assert reader._link is not None and reader._link.mode == "main"
        assert len(reader.sessions()) == 5
        _killed_writer(db, 5, 8)  # commits to the WAL, no checkpoint: the main file stays
        assert len(reader.sessions()) == 8 and reader.head("s7").rev == 0


def test_a_reader_follows_a_file_replaced_under_it(tmp_path: Path) -> None:
    db = _store(tmp_path, "clean")
    other = tmp_path / "other" / "s.db"
    other.parent.mkdir()
    with SQLiteStore(other) as writer:
        writer.create(make_revision("elsewhere", 0))
    with SQLiteStore(db, readonly=True) as reader:
        assert len(reader.sessions()) == 5
        os.replace(other, db)  # the file it reads is unlinked: no link left to it
        assert reader.sessions() == ["elsewhere"]


def test_a_read_run_again_when_the_file_changed_under_it(tmp_path: Path) -> None:
    db = _store(tmp_path, "clean")
    link = ReadOnlyLink(str(db))
    calls = []

    def read(conn: object) -> int:
        calls.append(link.mode)
        if len(calls) == 1:  # a writer commits, checkpoints and closes during the read
            with SQLiteStore(db) as writer:
                writer.create(make_revision("meanwhile", 0))
        return len(calls)

    try:
        assert link.run(read) == 2  # the first result was dropped, the read run again
    finally:
        link.close()


def test_a_private_copy_is_deleted_on_close(tmp_path: Path) -> None:
    db = _store(tmp_path, "wal-only")
    before = set(os.listdir(tempfile.gettempdir()))
    link = ReadOnlyLink(str(db))
    assert link.mode == "copy"
    made = set(os.listdir(tempfile.gettempdir())) - before
    assert len(made) == 1
    link.close()
    assert not (Path(tempfile.gettempdir()) / made.pop()).exists()


def test_a_read_only_store_refuses_writes_with_a_code(tmp_path: Path) -> None:
    db = _store(tmp_path, "clean")
    with SQLiteStore(db, readonly=True) as store, pytest.raises(StoreError) as info:
        store.create(make_revision("x", 0))
    assert (info.value.code, info.value.field) == ("STORE_READ_ONLY", "db")


def test_a_store_of_an_unknown_schema_is_refused_before_it_is_touched(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    db = _store(tmp_path, "clean")
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("UPDATE st_meta SET value = '99' WHERE key = 'schema'")
    before = snapshot(tmp_path)
    for opener in (lambda: SQLiteStore(db), lambda: SQLiteStore(db, durability="group"),
                   lambda: probe(db)):
        with pytest.raises(StoreError, match="st_ schema version 99"):
            opener()
        assert snapshot(tmp_path) == before  # not switched to WAL, no side file


def test_a_pipe_is_refused_without_being_opened(tmp_path: Path) -> None:
    pipe = tmp_path / "s.db"
    os.mkfifo(pipe)  # opening it to read would wait for a writer forever
    for opener in (lambda: SQLiteStore(pipe), lambda: SQLiteStore(pipe, readonly=True),
                   lambda: probe(pipe)):
        with pytest.raises(StoreError) as info:
            opener()
        assert info.value.code == "STORE_IO" and "not a regular file" in info.value.msg
    assert [p.name for p in tmp_path.iterdir()] == ["s.db"]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null here")
def test_a_device_is_refused_by_the_store_itself() -> None:
    beside = sorted(p.name for p in Path("/dev").iterdir() if p.name.startswith("null"))
    with pytest.raises(StoreError) as info:
        SQLiteStore("/dev/null")
    assert (info.value.code, info.value.field) == ("STORE_IO", "db")
    assert "not a regular file" in info.value.msg
    assert sorted(p.name for p in Path("/dev").iterdir() if p.name.startswith("null")) == beside


def test_a_writer_of_the_process_writes_beside_its_readers(tmp_path: Path) -> None:
    # SQLite maps a file's -shm once per process: a reader that mapped it read-only
    # first must not leave a writer opened later unable to write.
    db = _store(tmp_path, "killed")
    with SQLiteStore(db, readonly=True) as reader:
        assert reader._link is not None and reader._link.mode == "shared"
        assert len(reader.sessions()) == 60
        with SQLiteStore(db) as writer:  # reads lazily too, then writes
            assert writer.head("s1").rev == 0
            writer.create(make_revision("written", 0))
            writer.commit(make_revision("written", 1), expected_rev=0)
        assert reader.head("written").rev == 1
    with SQLiteStore(db, durability="group") as writer, \
            SQLiteStore(db, readonly=True) as reader:
        assert reader.head("written").rev == 1
        writer.commit(make_revision("written", 2), expected_rev=1)
        assert reader.head("written").rev == 2


def test_a_writable_store_writes_nothing_until_its_first_write(tmp_path: Path) -> None:
    for layout in ("clean", "killed"):
        folder = tmp_path / layout
        folder.mkdir()
        db = _store(folder, layout)
        before = snapshot(folder)
        with SQLiteStore(db) as store:
            assert store.head("s0").rev == 0 and len(store.history("s0")) == 1
        assert snapshot(folder) == before
