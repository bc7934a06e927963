"""Every write path of the SQLite store and of the evidence index on a full disk: a
commit (each durability, group commit included), a session's creation, a fork, compact,
an ingest. Each is ``STORE_FULL``, the store stays at its last committed revision, and
the same objects carry on once there is space (tests/support/tmpfs.py mounts the disk)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import pytest

from claimfsm._base.errors import ClaimFsmError
from claimfsm.skills.tools.index import Document, EvidenceIndex
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import StoreError
from claimfsm.state.fsck import fsck
from claimfsm.state.sqlite import SQLiteStore
from tests.support.tmpfs import mounted_tmpfs, remount

_TEXT = "Words that do not compress well: {n} " + "".join(chr(0x41 + (i * 7) % 26)
                                                         for i in range(3000))


def _commit_until_full(store: SQLiteStore, sid: str) -> int:
    """Commit growing revisions of ``sid`` until the disk is full; the last head."""
    head = 0
    for rev in range(1, 5000):
        pages = {f"p{rev}": {"text": _TEXT.format(n=rev) + str(rev) * 50}}
        state = make_state(sid, rounds=rev, pages=pages)
        try:
            store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)
        except StoreError as exc:
            assert (exc.code, exc.field) == ("STORE_FULL", "db"), exc
            return head
        head = rev
    pytest.fail("the disk never filled up")


@pytest.mark.parametrize("durability", ["normal", "full", "group"])
def test_commits_on_a_full_disk_are_store_full_and_carry_on_with_space(
        tmp_path: Path, durability: Literal["normal", "full", "group"]) -> None:
    with mounted_tmpfs(tmp_path / "small", 600_000) as small:
        db = small / "s.db"
        with SQLiteStore(db, durability=durability) as store:
            store.create(make_revision("a", 0))
            head = _commit_until_full(store, "a")
            assert head > 0 and store.head("a").rev == head
            with pytest.raises(StoreError) as info:  # a new session does not fit either
                store.create(make_revision("b", 0, make_state("b", pages={
                    "p": {"text": _TEXT.format(n="b") * 20}})))
            assert info.value.code == "STORE_FULL"
            with pytest.raises(StoreError) as info:  # a fork copies every row
                store.fork("a", head, "a-fork")
            assert info.value.code == "STORE_FULL"
            assert store.sessions() == ["a"] and store.head("a").rev == head
            remount(small, "size=64m")
            store.commit(make_revision("a", head + 1, make_state("a", rounds=0)),
                         expected_rev=head)
            store.fork("a", head, "a-again")
            assert store.compact().skipped == []
            assert fsck(store).ok
        with SQLiteStore(db, readonly=True) as view:
            assert view.head("a").rev == head + 1 and view.head("a-again").rev == head


def _fill(folder: Path) -> Path:
    """A file taking every byte left on the disk of ``folder``."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def test_compact_on_a_full_disk_is_store_full_and_changes_nothing(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "small", 2_000_000) as small:
        db = small / "s.db"
        with SQLiteStore(db, snapshot_every=64) as store:
            store.create(make_revision("a", 0))
            for rev in range(1, 40):
                store.commit(make_revision("a", rev, make_state("a", rounds=rev)),
                             expected_rev=rev - 1)
        filler = _fill(small)
        with SQLiteStore(db, snapshot_every=2) as store:  # a rewrite that needs room
            with pytest.raises(StoreError) as info:
                store.compact()
            assert info.value.code == "STORE_FULL"
            store.clear_cache()
            assert store.head("a").rev == 39 and fsck(store).ok
            filler.unlink()
            assert store.compact().rewritten > 0
            assert fsck(store).ok


def test_the_evidence_index_on_a_full_disk_is_store_full(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "small", 500_000) as small:
        index = EvidenceIndex.open(small / "ev.db")
        try:
            with pytest.raises(ClaimFsmError) as info:
                for n in range(2000):
                    index.add_documents([Document(doc_id=f"d{n}", title=f"T{n}",
                                                  text=_TEXT.format(n=n))])
            assert (info.value.code, info.value.field) == ("STORE_FULL", "db")
            stored = index.count_documents()
            assert 0 < stored < 2000
            remount(small, "size=64m")
            index.add_documents([Document(doc_id="after", title="T", text="space again")])
            assert index.count_documents() == stored + 1
        finally:
            index.close()


def test_a_store_opened_on_a_full_disk_reads_and_its_first_commit_is_store_full(
        tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "small", 2_000_000) as small:
        db = small / "s.db"
        with SQLiteStore(db) as store:
            store.create(make_revision("a", 0))
        filler = _fill(small)
        with SQLiteStore(db) as store:  # reads without writing, then its first write
            assert store.head("a").rev == 0
            with pytest.raises(StoreError) as info:
                store.commit(make_revision("a", 1), expected_rev=0)  # one statement
            assert (info.value.code, info.value.field) == ("STORE_FULL", "db")
            assert store.head("a").rev == 0  # reads go on
            filler.unlink()
            store.commit(make_revision("a", 1), expected_rev=0)
            assert store.head("a").rev == 1
