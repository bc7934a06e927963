"""Commands that only read change no byte of any file and create none: not the store,
not its ``-wal`` or ``-shm``, not a file beside it; also when they fail, after a killed
writer left its WAL, and on files copied without their ``-shm``. ``replay --mode live``
refuses another program's database as ``batch`` does, and no command creates anything
next to a device path."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from tests.support.peek import peek

Snapshot = dict[str, tuple[int, int, str]]


def snapshot(folder: Path) -> Snapshot:
    """``(size, mtime_ns, sha256)`` of every file in ``folder``."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns,
                     hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.iterdir())}


def invoke(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and "INTERNAL" not in res.output, res.output
    return res


# The killed writer: a fork committed, then the process dies without closing, so the
# WAL holds commits the main file does not and the -shm is left as it was.
_KILLED = """
import os, sys
from claimfsm.state.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
store.fork(sys.argv[2], 3, "killed-writer")
os._exit(0)
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = tmp_path_factory.mktemp("made")
    db = d / "s.db"
    assert invoke("verify", "Water boils at 100 degrees.", "--db", str(db)).exit_code == 0
    sid = peek(db, "SELECT sid FROM st_sessions")[0][0]
    return db, sid


def _layout(made: tuple[Path, str], where: Path, layout: str) -> Path:
    """A copy of the store in ``where``: ``clean`` (one file, closed properly),
    ``killed`` (a killed writer's WAL and -shm beside it), ``wal-only`` (the killed
    writer's files copied without the -shm)."""
    src, sid = made
    folder = where / "store"
    folder.mkdir()
    db = folder / "s.db"
    shutil.copy(src, db)
    if layout == "clean":
        return db
    subprocess.run([sys.executable, "-c", _KILLED, str(db), sid], check=True)
    assert (folder / "s.db-wal").stat().st_size > 0 and (folder / "s.db-shm").exists()
    if layout == "wal-only":
        (folder / "s.db-shm").unlink()
    (folder / "s.db-writer").unlink()  # the writers' queue file: not a reader's business
    return db


def _commands(sid: str, db: Path, out: Path) -> list[list[str]]:
    record = out / "r.jsonl"
    if not record.exists():
        res = invoke("export", sid, "--db", str(db))
        record.write_text(res.stdout)
    return [
        ["show", sid], ["show", sid, "--rev", "1", "--json"], ["history", sid],
        ["sessions"], ["sessions", "--json", "-q", "water"], ["export", sid],
        ["export", sid, "-o", str(out / "export.jsonl")], ["fsck"],
        ["report", sid, "--html", str(out / "r.html")],
        ["replay", str(record), "--mode", "live"],
        ["check-compat"], ["check-compat", "--json"], ["sessions", "--version", "unknown"],
        # and when they fail
        ["show", "no-such-session"], ["history", "no-such-session"],
        ["export", "no-such-session"], ["report", "no-such-session", "--html",
                                        str(out / "x.html")],
        ["show", sid, "--rev", "999"],
    ]


@pytest.mark.parametrize("layout", ["clean", "killed", "wal-only"])
def test_reading_commands_change_no_byte_and_create_no_file(
        made: tuple[Path, str], layout: str, tmp_path: Path) -> None:
    db = _layout(made, tmp_path, layout)
    out = tmp_path / "out"
    out.mkdir()
    sid = made[1]
    for cmd in _commands(sid, db, out):
        before = snapshot(db.parent)
        res = invoke(*cmd, "--db", str(db))
        assert snapshot(db.parent) == before, (cmd, res.output)
        failing = "no-such-session" in cmd or "999" in cmd
        assert (res.exit_code == 2) == failing, (cmd, res.output)


@pytest.mark.parametrize("layout", ["killed", "wal-only"])
def test_readers_see_what_the_killed_writer_committed(
        made: tuple[Path, str], layout: str, tmp_path: Path) -> None:
    db = _layout(made, tmp_path, layout)
    res = invoke("history", "killed-writer", "--json", "--db", str(db))
    assert res.exit_code == 0 and '"rev": 3' in res.output
    assert "killed-writer" in invoke("sessions", "--db", str(db)).output
    assert invoke("fsck", "--db", str(db)).output.startswith("ok: 2 sessions")


def test_live_replay_refuses_another_programs_database(
        made: tuple[Path, str], tmp_path: Path) -> None:
    record = tmp_path / "r.jsonl"
    record.write_text(invoke("export", made[1], "--db", str(made[0])).stdout)
    folder = tmp_path / "theirs"
    folder.mkdir()
    theirs = folder / "theirs.db"
    with closing(sqlite3.connect(theirs)) as conn, conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    (folder / "garbage.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 5000)
    before = snapshot(folder)
    for name, code in [("theirs.db", "STORE_FOREIGN"), ("garbage.db", "STORE_NOT_DATABASE")]:
        res = invoke("replay", str(record), "--mode", "live", "--db", str(folder / name))
        assert res.exit_code == 2 and f"error: {code}:" in res.output, res.output
    assert snapshot(folder) == before


_WRITERS = [["verify", "Water boils."], ["start", "Water boils."], ["step", "SID"],
            ["rollback", "SID", "--to", "0"], ["fork", "SID", "--at", "0"], ["compact"],
            ["demo"], ["ingest", "DOCS"]]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null here")
@pytest.mark.parametrize("cmd", [*_WRITERS, ["show", "SID"], ["fsck"], ["sessions"]])
def test_a_device_path_is_refused_and_nothing_is_created_beside_it(
        cmd: list[str], tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "T", "text": "Water boils."}\n')
    beside = {p.name for p in Path("/dev").iterdir() if p.name.startswith("null")}
    args = [str(docs) if a == "DOCS" else a for a in cmd]
    res = invoke(*args, "--db", "/dev/null")
    assert res.exit_code == 2 and "error: STORE_IO: --db: /dev/null is not a regular file" \
        in res.output, res.output
    assert {p.name for p in Path("/dev").iterdir() if p.name.startswith("null")} == beside


def test_a_store_of_an_unknown_schema_is_refused_untouched(
        made: tuple[Path, str], tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    shutil.copy(made[0], db)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA journal_mode=DELETE")  # as a newer claimfsm might leave it
        conn.execute("UPDATE st_meta SET value = '99' WHERE key = 'schema'")
    before = snapshot(tmp_path)
    for cmd in (["verify", "Water boils."], ["step", made[1]], ["compact"], ["show", made[1]],
                ["fsck"], ["sessions"]):
        res = invoke(*cmd, "--db", str(db))
        assert res.exit_code == 2 and "st_ schema version 99" in res.output, (cmd, res.output)
        assert snapshot(tmp_path) == before, cmd


@pytest.mark.parametrize("layout", ["clean", "killed"])
def test_the_ui_only_looked_at_changes_no_byte_then_writes_when_asked(
        made: tuple[Path, str], layout: str, tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from claimfsm.cli.common import engine
    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service

    db = _layout(made, tmp_path, layout)
    sid = made[1]
    before = snapshot(db.parent)
    pages = ["/", f"/sessions/{sid}", f"/sessions/{sid}/panels", "/documents/DOC", "/replay",
             "/api/v1/sessions", "/api/v1/sessions?q=water", f"/api/v1/sessions/{sid}",
             f"/api/v1/sessions/{sid}/head", f"/api/v1/sessions/{sid}/history",
             f"/api/v1/sessions/{sid}/revisions/1", f"/api/v1/sessions/{sid}/diff?a=0&b=2",
             f"/api/v1/sessions/{sid}/report", f"/api/v1/sessions/{sid}/record",
             f"/api/v1/sessions/{sid}/check", "/api/v1/records", "/api/v1/documents/DOC",
             "/api/v1/machine", "/api/v1/sessions/no-such-session"]
    # The command's own way of opening: `claimfsm ui` serves this engine.
    with engine(str(db), False) as eng:
        doc = eng.index.search("water boils", lim=1)[0].doc_id
        with TestClient(create_app(Service(eng), db_label=db.name)) as client:
            for page in pages:
                res = client.get(page.replace("DOC", doc))
                assert res.status_code == (404 if "no-such" in page else 200), page
            assert snapshot(db.parent) == before
            res = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2})
            assert res.status_code == 201, res.text
            forked = res.json()["sid"]
            assert client.get(f"/api/v1/sessions/{forked}/head").json()["rev"] == 3
    assert snapshot(db.parent) != before  # it wrote when asked to
    assert invoke("fsck", "--db", str(db)).output.startswith("ok: ")
