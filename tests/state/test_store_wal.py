"""The WAL of a ``full`` store starts over after ``FULL_CHECKPOINT_PAGES`` pages instead
of growing to SQLite's default 1000 (state/sqlite/db.py says why); ``normal`` keeps the
default. Either way every revision reads back as committed and the file checks clean."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Literal

import pytest

from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.fsck import fsck
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.sqlite.db import FULL_CHECKPOINT_PAGES

_FRAME = 4096 + 24  # a WAL frame: its header and one page


def _text(n: int) -> str:
    # ~13 KB that deflate cannot shrink much: each commit adds a blob of a few pages.
    chunk = hashlib.sha256(str(n).encode()).digest()
    return base64.b64encode(b"".join(hashlib.sha256(chunk + i.to_bytes(2, "big")).digest()
                                     for i in range(300))).decode()


def _commit(store: SQLiteStore, sid: str, revisions: int) -> tuple[int, int]:
    """Commit ``revisions`` revisions after 0; the WAL's largest size seen, in frames,
    and a lower bound of the pages written to it (the blobs' bytes in 4 KB pages)."""
    store.create(make_revision(sid, 0))
    wal = f"{store.path}-wal"
    largest = 0
    for rev in range(1, revisions + 1):
        state = make_state(sid, rounds=rev, pages={f"p{rev}": {"text": _text(rev)}})
        store.commit(make_revision(sid, rev, state), expected_rev=rev - 1)
        largest = max(largest, os.path.getsize(wal))
    return largest // _FRAME, store.stats()["blob_bytes"] // 4096


@pytest.mark.parametrize("durability", ["full", "normal"])
def test_the_wal_of_a_full_store_starts_over_sooner(
        tmp_path: Path, durability: Literal["full", "normal"]) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path, durability=durability) as store:
        largest, pages = _commit(store, "a", 250)
        assert pages > 2 * FULL_CHECKPOINT_PAGES  # enough to wrap a short WAL twice
        if durability == "full":
            # A commit may run past the threshold by its own pages before it checkpoints.
            assert largest <= FULL_CHECKPOINT_PAGES + 16, largest
        else:
            assert largest > FULL_CHECKPOINT_PAGES + 16, largest
    with SQLiteStore(path) as again:  # read from the file, not the writer's cache
        for rev in (0, 1, 125, 250):
            assert again.get("a", rev) == make_revision(
                "a", rev, None if rev == 0 else make_state(
                    "a", rounds=rev, pages={f"p{rev}": {"text": _text(rev)}}))
        report = fsck(again)
        assert report.ok and report.revisions == 251, report
