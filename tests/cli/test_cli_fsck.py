"""``claimfsm fsck`` and ``claimfsm compact`` through the CLI: clean files, tampered rows,
missing files, compaction that rewrites rows without changing a revision, and pruning.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from claimfsm.bench.workflow import PIPELINE
from claimfsm.cli.main import main
from claimfsm.skills.context import FixedClock
from claimfsm.state.sqlite import SQLiteStore


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _sessions(db: Path, n: int = 3, snapshot_every: int = 16) -> list[str]:
    with SQLiteStore(db, snapshot_every=snapshot_every) as store:
        driver = PIPELINE.driver(store, clock=FixedClock(tick=timedelta(seconds=1)))
        sids = [driver.run(driver.start(f"batch {i}", sid=f"s{i}").sid).sid for i in range(n)]
        driver.rollback("s1", 2)
        return sids


def _history(db: Path, sid: str) -> list[dict[str, Any]]:
    with SQLiteStore(db) as store:
        return [r.model_dump(mode="json") for r in store.history(sid)]


def _sql(db: Path, statement: str, *args: Any) -> int:
    with closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(statement, args).rowcount


def test_fsck_is_clean_on_a_sound_file(tmp_path: Path) -> None:
    db = tmp_path / "ok.db"
    _sessions(db)
    code, out = cli("fsck", "--db", str(db))
    assert code == 0
    assert out.strip() == "ok: 3 sessions, 22 revisions checked"
    code, out = cli("fsck", "--db", str(db), "--json")
    assert code == 0
    assert orjson.loads(out) == {"ok": True, "sessions": 3, "revisions": 22, "problems": [],
                                 "deleted": []}


def test_fsck_reports_the_first_broken_link_of_a_tampered_row(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    _sessions(db)
    # Rewrite s1's revision 4 with another (well-formed) delta: only the hash can tell.
    k = (2 << 32) + 4
    assert _sql(db, "UPDATE st_revisions SET body = ? WHERE k = ?",
                b'{"memory":[0,{"n":99}]}', k) == 1
    code, out = cli("fsck", "--db", str(db))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[0].startswith("s1 rev 4: HASH_MISMATCH: ")
    assert lines[-1] == "BROKEN (1 sessions): 3 sessions, 22 revisions checked"
    code, out = cli("fsck", "--db", str(db), "--json")
    report = orjson.loads(out)
    assert code == 1 and not report["ok"]
    assert [(p["sid"], p["rev"], p["problem"]) for p in report["problems"]] == [
        ("s1", 4, "HASH_MISMATCH")]


def test_fsck_reports_an_edited_hash_and_a_gap_per_session(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    _sessions(db)
    assert _sql(db, "UPDATE st_revisions SET hash = zeroblob(32) WHERE k = ?", (1 << 32) + 2) == 1
    assert _sql(db, "DELETE FROM st_revisions WHERE k = ?", (3 << 32) + 3) == 1
    code, out = cli("fsck", "--db", str(db), "--json")
    problems = [(p["sid"], p["rev"], p["problem"]) for p in orjson.loads(out)["problems"]]
    assert code == 1 and problems == [("s0", 2, "HASH_MISMATCH"), ("s2", 3, "REV_GAP")]


def test_fsck_and_compact_refuse_a_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.db")
    for command in ("fsck", "compact"):
        code, out = cli(command, "--db", missing)
        assert code == 2 and out.startswith("error: UNKNOWN_DB: --db: no such file")
        code, out = cli(command, "--db", missing, "--json")
        assert code == 2 and orjson.loads(out)["error"]["code"] == "UNKNOWN_DB"
    assert not Path(missing).exists()


def test_compact_rewrites_rows_and_every_revision_reads_the_same(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    sids = _sessions(db, snapshot_every=2)  # written with a snapshot every 2 revisions
    before = {sid: _history(db, sid) for sid in sids}
    code, out = cli("compact", "--db", str(db), "--json")
    report = orjson.loads(out)
    assert code == 0 and report["sessions"] == 3 and report["skipped"] == []
    assert report["rewritten"] > 0  # snapshots at 2, 4, 6 became deltas under 16
    with closing(sqlite3.connect(db)) as conn, conn:
        kinds = conn.execute("SELECT kind FROM st_revisions WHERE k >> 32 = 1").fetchall()
    # One snapshot; each step of the pipeline sets whole every field changed since it, so
    # every delta is marked with its distance to it (1 + d, schema 5).
    assert [k for (k,) in kinds] == [0, 2, 3, 4, 5, 6, 7]
    assert {sid: _history(db, sid) for sid in sids} == before
    assert cli("fsck", "--db", str(db))[0] == 0
    code, out = cli("compact", "s0", "--db", str(db))
    assert code == 0 and out.strip() == "compacted 1 sessions: 0 rows rewritten, 0 blobs dropped"


def test_compact_leaves_a_broken_chain_alone(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    _sessions(db, snapshot_every=2)
    k = (2 << 32) + 3
    assert _sql(db, "UPDATE st_revisions SET ts = 'forged' WHERE k = ?", k) == 1
    with closing(sqlite3.connect(db)) as conn, conn:
        rows_before = conn.execute("SELECT * FROM st_revisions WHERE k >> 32 = 2").fetchall()
    result = CliRunner().invoke(main, ["compact", "--db", str(db)])
    assert result.exit_code == 1
    assert "skipped s1: its chain does not verify" in result.output
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT * FROM st_revisions WHERE k >> 32 = 2").fetchall() == \
            rows_before
    code, out = cli("fsck", "--db", str(db), "--json")
    problems = [(p["sid"], p["rev"], p["problem"]) for p in orjson.loads(out)["problems"]]
    assert code == 1 and problems == [("s1", 3, "HASH_MISMATCH")]


def test_compact_prunes_unreferenced_blobs_unless_told_not_to(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _sessions(db)
    orphan = bytes(range(32))
    _sql(db, "INSERT INTO st_blobs (h, z, data) VALUES (?, 0, ?)", orphan, b"orphan")
    code, out = cli("compact", "--no-prune", "--db", str(db), "--json")
    assert code == 0 and orjson.loads(out)["blobs_dropped"] == 0
    code, out = cli("compact", "--db", str(db), "--json")
    assert code == 0 and orjson.loads(out)["blobs_dropped"] == 1
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT count(*) FROM st_blobs WHERE h = ?", (orphan,)).fetchone() \
            == (0,)


def test_compact_of_an_unknown_session_is_a_clean_error(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    _sessions(db, n=2)
    code, out = cli("compact", "ghost", "--db", str(db))
    assert code == 2 and out.startswith("error: UNKNOWN_SESSION: ")
