"""Forks that share their parent's rows (SQLite schema 7, state/sqlite/shares.py): they
read exactly as the copying fork read (same revisions, same listing), forks of forks
too; erasing a parent copies the shared rows into its forks first, so they keep reading
the same and stay fsck-clean; a fork is whole or absent after a kill; files from before
schema 7 read as they are and are upgraded on their first writable open; fsck reports a
segment whose parent rows are gone."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.fsck import fsck
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite.db import SCHEMA_VERSION
from claimfsm.state.sqlite.store import SQLiteStore
from claimfsm.state.store import StateStore

TS = "2026-02-01T00:00:00Z"
ROOT = Path(__file__).resolve().parents[2]


def _grow(store: StateStore, sid: str, n: int, start: int = 0) -> None:
    """Revisions ``start + 1 .. n`` of ``sid`` (``start == 0``: created first)."""
    if start == 0:
        state = SessionState(sid=sid, claim="Sea levels are rising.", fsm="PARSE_CLAIM")
        store.create(Revision(sid=sid, rev=0, parent_rev=None, fsm=state.fsm, skill=None,
                              envelope=None, state=state, ts="2026-01-01T00:00:00Z"))
    for rev in range(start + 1, n + 1):
        head = store.head(sid)
        state = head.state.model_copy(update={
            "rounds": rev, "memory": {"log": [*head.state.memory.get("log", []), rev]},
            "steps": [*head.state.steps, {"n": rev, "note": f"{sid} {rev} " * (rev * 40)}]})
        store.commit(Revision(sid=sid, rev=rev, parent_rev=rev - 1, fsm=state.fsm,
                              skill="step", envelope={"s": "ok", "d": {"n": rev}}, state=state,
                              ts=f"2026-01-01T00:00:{rev:02d}Z"), expected_rev=rev - 1)


def _fork(store: SQLiteStore, src: str, at: int, sid: str, shared: bool) -> Revision:
    if shared:
        return store.fork(src, at, sid, then=lambda copy: forked_revision(copy, src, TS))
    copy = store.fork(src, at, sid)  # the copying fork, as before schema 7
    return store.commit(forked_revision(copy, src, TS), expected_rev=copy.rev)


def _build(store: SQLiteStore, shared: bool) -> None:
    """A parent, a fork of it, a fork of the fork inside the parent's part and one in
    the fork's own part, each run on a few steps."""
    _grow(store, "p", 9)
    _fork(store, "p", 4, "f", shared)
    _grow(store, "f", 8, start=5)
    _fork(store, "f", 3, "ff", shared)  # inside what "f" shares with "p"
    _grow(store, "ff", 6, start=4)
    _fork(store, "f", 7, "fg", shared)  # inside "f"'s own rows
    _grow(store, "fg", 10, start=8)


def _reads(store: SQLiteStore, sid: str) -> list[Any]:
    head = store.head(sid)
    revisions = [store.get(sid, rev).model_dump_json() for rev in range(head.rev + 1)]
    page = [r.model_dump_json() for r in store.history_page(sid, 2, 5).items]
    return [revisions, [r.model_dump_json() for r in store.history(sid)], page,
            store.forks(sid)]


def _pair(tmp_path: Path, snapshot_every: int = 3) -> tuple[Path, Path]:
    paths = tmp_path / "copied.db", tmp_path / "shared.db"
    for path, shared in zip(paths, (False, True), strict=True):
        with SQLiteStore(path, snapshot_every=snapshot_every) as store:
            _build(store, shared)
    return paths


SIDS = ("p", "f", "ff", "fg")


@pytest.mark.parametrize("snapshot_every", [1, 3, 8])
def test_shared_forks_read_as_copied_forks_do(tmp_path: Path, snapshot_every: int) -> None:
    copied, shared = _pair(tmp_path, snapshot_every)
    with SQLiteStore(copied, readonly=True) as old, SQLiteStore(shared, readonly=True) as new:
        for sid in SIDS:
            assert _reads(new, sid) == _reads(old, sid), sid
        assert list(new.sessions()) == list(old.sessions())
        assert fsck(new).ok and fsck(old).ok
    with closing(sqlite3.connect(shared)) as conn, conn:
        segments = conn.execute("SELECT sid, shares FROM st_sessions ORDER BY id").fetchall()
        # "fg" shares 0..4 with "p" directly and 5..7 with "f": one link per read.
        assert segments == [("p", None), ("f", '[[0,4,1,"p"]]'), ("ff", '[[0,3,1,"p"]]'),
                            ("fg", '[[0,4,1,"p"],[5,7,2,"f"]]')]
        own = dict(conn.execute("SELECT s.sid, count(*) FROM st_revisions r JOIN st_sessions s"
                                " ON r.k >> 32 = s.id GROUP BY s.sid").fetchall())
        assert own == {"p": 10, "f": 4, "ff": 3, "fg": 3}


def test_a_cold_store_and_the_forking_store_read_the_same(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteStore(path, snapshot_every=4) as store:
        _build(store, True)
        warm = {sid: _reads(store, sid) for sid in SIDS}
        hashes = {sid: [store.revision_hash(sid, r) for r in range(store.head(sid).rev + 1)]
                  for sid in SIDS}
    with SQLiteStore(path, readonly=True) as cold:
        assert {sid: _reads(cold, sid) for sid in SIDS} == warm
        assert {sid: [cold.revision_hash(sid, r) for r in range(cold.head(sid).rev + 1)]
                for sid in SIDS} == hashes
        # What a fork shares keeps its parent's hash.
        assert hashes["fg"][:5] == hashes["p"][:5] and hashes["fg"][5:8] == hashes["f"][5:8]


@pytest.mark.parametrize("order", [("f",), ("p",), ("p", "f"), ("f", "p"), ("p", "f", "ff")])
def test_erasing_a_parent_keeps_its_forks(tmp_path: Path, order: tuple[str, ...]) -> None:
    copied, shared = _pair(tmp_path)
    with SQLiteStore(copied, readonly=True) as old:
        expected = {sid: _reads(old, sid)[:3] for sid in SIDS if sid not in order}
    with SQLiteStore(shared) as store:
        hashes = {sid: [store.revision_hash(sid, r) for r in range(store.head(sid).rev + 1)]
                  for sid in expected}
        for sid in order:
            report = store.erase({sid: None}, actor="test", at=TS)
            assert [stone.sid for stone in report.tombstones] == [sid]
        assert {sid: _reads(store, sid)[:3] for sid in expected} == expected
        assert fsck(store).ok
    with SQLiteStore(shared, readonly=True) as cold:
        assert {sid: _reads(cold, sid)[:3] for sid in expected} == expected
        # No visible hash changed: the rows were copied as they were.
        assert {sid: [cold.revision_hash(sid, r) for r in range(cold.head(sid).rev + 1)]
                for sid in expected} == hashes
        report = fsck(cold)
        assert report.ok and sorted(s.sid for s in report.deleted) == sorted(order)
    # Nothing points at an erased session's rows.
    with closing(sqlite3.connect(shared)) as conn, conn:
        erased = {row[0] for row in conn.execute("SELECT id FROM st_tombstones")}
        sources = {share[2] for (text,) in conn.execute(
            "SELECT shares FROM st_sessions WHERE shares IS NOT NULL")
            for share in orjson.loads(text)}
        assert sources and not erased & sources


def test_another_process_erasing_a_parent_does_not_break_a_reader(tmp_path: Path) -> None:
    _, shared = _pair(tmp_path)
    with SQLiteStore(shared) as reader, SQLiteStore(shared) as eraser:
        before = _reads(reader, "fg")
        reader.clear_cache()  # the reader still knows the segments, not the revisions
        eraser.erase({"p": None}, actor="test", at=TS)
        assert _reads(reader, "fg") == before and reader.verify_chain("fg").ok


def test_compact_keeps_what_forks_share(tmp_path: Path) -> None:
    _, shared = _pair(tmp_path, snapshot_every=3)
    with SQLiteStore(shared, readonly=True) as view:
        before = {sid: _reads(view, sid) for sid in SIDS}
    with SQLiteStore(shared, snapshot_every=5) as store:
        report = store.compact()
        assert report.skipped == [] and report.rewritten > 0
    with SQLiteStore(shared, readonly=True) as view:
        assert {sid: _reads(view, sid) for sid in SIDS} == before and fsck(view).ok


def test_fsck_reports_a_segment_whose_parent_rows_are_gone(tmp_path: Path) -> None:
    _, shared = _pair(tmp_path)
    # Damage: the parent's revision 4 removed by hand.
    with closing(sqlite3.connect(shared)) as conn, conn:
        (pid,) = conn.execute("SELECT id FROM st_sessions WHERE sid = 'p'").fetchone()
        conn.execute("DELETE FROM st_revisions WHERE k = ?", ((pid << 32) + 4,))
    with SQLiteStore(shared, readonly=True) as view:
        problems = {(p.sid, p.problem, p.rev) for p in fsck(view).problems}
    assert ("f", "FORK_PARENT_MISSING", 0) in problems
    assert ("fg", "FORK_PARENT_MISSING", 0) in problems
    assert ("p", "REV_GAP", 4) in problems


def test_fsck_reports_a_fork_whose_link_does_not_hold(tmp_path: Path) -> None:
    _, shared = _pair(tmp_path)
    # Damage: "f" now claims to fork "p" at 3.
    with closing(sqlite3.connect(shared)) as conn, conn:
        conn.execute("""UPDATE st_sessions SET shares = '[[0,3,1,"p"]]' WHERE sid = 'f'""")
    with SQLiteStore(shared, readonly=True) as view:
        problems = {p.sid: p.problem for p in fsck(view).problems}
    assert problems.get("f") in ("REV_GAP", "HASH_MISMATCH")


def _as_schema_5(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute("SELECT count(shares) FROM st_sessions").fetchone() == (0,)
        conn.execute("ALTER TABLE st_sessions DROP COLUMN shares")
        conn.execute("UPDATE st_meta SET value = '5' WHERE key = 'schema'")


def test_a_schema_5_file_reads_as_it_is_and_upgrades(tmp_path: Path) -> None:
    copied, _ = _pair(tmp_path)
    with SQLiteStore(copied, readonly=True) as view:
        expected = {sid: _reads(view, sid) for sid in SIDS}
    _as_schema_5(copied)
    with SQLiteStore(copied, readonly=True) as view:  # read-only: read, not upgraded
        assert {sid: _reads(view, sid) for sid in SIDS} == expected and fsck(view).ok
    with closing(sqlite3.connect(copied)) as conn, conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key = 'schema'").fetchone() == (
            "5",)
    with SQLiteStore(copied) as store:  # the first write upgrades; old forks stay copies
        _fork(store, "fg", 9, "new", True)
        assert {sid: _reads(store, sid)[:3] for sid in SIDS} == {
            sid: reads[:3] for sid, reads in expected.items()}
        assert store.forks("fg") == [{"sid": "new", "rev": 9, "at": TS}]
        assert store.get("new", 9).state == store.get("fg", 9).state.model_copy(
            update={"sid": "new"})
        assert fsck(store).ok
    with closing(sqlite3.connect(copied)) as conn, conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key = 'schema'").fetchone() == (
            SCHEMA_VERSION,)
        # "fg" is a copy (schema 5): the new fork shares its rows, all of them its own.
        assert conn.execute("SELECT shares FROM st_sessions WHERE sid = 'new'").fetchone() == (
            '[[0,9,4,"fg"]]',)


_CHILD = """
import sys
from claimfsm.state.contract_forks import forked_revision
from claimfsm.state.sqlite.store import SQLiteStore
with SQLiteStore(sys.argv[1], durability=sys.argv[2]) as store:
    n = 0
    while True:
        at = n % 8
        name = f"{sys.argv[3]}k{n}"
        store.fork("p", at, name, then=lambda c: forked_revision(c, "p", "t"))
        print(f"{name} {at}", flush=True)
        n += 1
"""


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_a_killed_fork_is_whole_or_absent(tmp_path: Path, durability: str) -> None:
    path = tmp_path / "kill.db"
    with SQLiteStore(path) as store:
        _grow(store, "p", 8)
    rng = random.Random(7)
    reported: dict[str, int] = {}
    for attempt in range(4):
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), durability,
                                 f"r{attempt}"],
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for _ in range(rng.randrange(3, 12)):
            line = proc.stdout.readline()
            if not line:
                break
            name, at = line.split()
            reported[name] = int(at)
        time.sleep(rng.random() * 0.02)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err
        for line in out.split("\n"):
            if line.strip():
                name, at = line.split()
                reported[name] = int(at)
    with SQLiteStore(path) as store:
        forks = [s for s in store.sessions() if s != "p"]
        assert set(reported) <= set(forks)  # every fork reported is there
        for sid in forks:  # and every fork there is whole
            head = store.head(sid)
            at = head.rev - 1
            assert [r.rev for r in store.history(sid)] == list(range(head.rev + 1))
            assert store.get(sid, at).state == store.get("p", at).state.model_copy(
                update={"sid": sid})
        assert {f["sid"] for f in store.forks("p", limit=1000)} == set(forks)
        assert fsck(store).ok
