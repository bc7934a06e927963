"""One error path for every command: bad --db files become STORE_* codes (exit 2, one
line, no traceback); commands that read never create or change a database; numbers in
options are checked; a record that cannot be written leaves no session behind."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from tests.support.peek import peek
from tests.support.privileges import cli_unprivileged, make_readonly

READERS = [["show", "SID"], ["history", "SID"], ["export", "SID"], ["fsck"]]
NEED_STORE = [["step", "SID"], ["rollback", "SID", "--to", "0"], ["fork", "SID", "--at", "0"],
              ["compact"]]
WRITERS = [["verify", "Water boils."], ["start", "Water boils."]]


def invoke(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    return res


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("dbs")
    good = d / "good.db"
    assert invoke("verify", "Water boils at 100 degrees.", "--db", str(good)).exit_code == 0
    conn = sqlite3.connect(good)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    (d / "text.db").write_text("hello, not a database\n")
    (d / "trunc.db").write_bytes(good.read_bytes()[:5000])
    foreign = sqlite3.connect(d / "foreign.db")
    foreign.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
    foreign.commit()
    foreign.close()
    (d / "empty.db").write_bytes(b"")
    return {p.stem: p for p in d.iterdir() if p.suffix == ".db"}


@pytest.mark.parametrize("name,code", [("text", "STORE_NOT_DATABASE"),
                                       ("trunc", "STORE_NOT_DATABASE"),
                                       ("foreign", "STORE_FOREIGN")])
@pytest.mark.parametrize("cmd", READERS + NEED_STORE + WRITERS + [["ingest", "DOCS"]])
def test_a_bad_db_file_is_a_store_code_and_is_left_as_it_was(
        files: dict[str, Path], name: str, code: str, cmd: list[str], tmp_path: Path) -> None:
    db = tmp_path / f"{name}.db"
    shutil.copy(files[name], db)
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "T", "text": "Water boils."}\n')
    before = db.read_bytes()
    args = [str(docs) if a == "DOCS" else a for a in cmd]
    res = invoke(*args, "--db", str(db))
    assert res.exit_code == 2 and f"error: {code}:" in res.output
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["docs.jsonl", db.name])


@pytest.mark.parametrize("cmd", [["show", "SID"], ["history", "SID"]])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_store_failing_in_the_middle_of_a_command_is_a_store_code(
        files: dict[str, Path], cmd: list[str], as_json: bool, tmp_path: Path) -> None:
    # The store itself turns SQLite's error into STORE_IO: the command has no catch of its own.
    db = tmp_path / "gone.db"
    shutil.copy(files["good"], db)
    with closing(sqlite3.connect(db)) as conn, conn:
        sid = conn.execute("SELECT sid FROM st_sessions").fetchone()[0]
        conn.execute("DROP TABLE st_blobs")
    args = [sid if a == "SID" else a for a in cmd] + (["--json"] if as_json else [])
    res = invoke(*args, "--db", str(db))
    msg = f"--db: {db}: no such table: st_blobs"
    assert res.exit_code == 2
    if as_json:
        assert orjson.loads(res.stdout) == {"error": {"code": "STORE_IO", "msg": msg}}
    else:
        assert res.output == f"error: STORE_IO: {msg}\n"


@pytest.mark.parametrize("cmd", READERS + NEED_STORE)
def test_reading_commands_never_create_a_database(cmd: list[str], tmp_path: Path) -> None:
    for db in (tmp_path / "missing.db", tmp_path / "no" / "folder.db"):
        res = invoke(*cmd, "--db", str(db))
        assert res.exit_code == 2 and "error: UNKNOWN_DB:" in res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cmd", READERS + NEED_STORE)
def test_an_empty_file_is_not_written_into(cmd: list[str], tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    res = invoke(*cmd, "--db", str(db))
    assert res.exit_code == 2 and "UNKNOWN_DB" in res.output
    assert db.read_bytes() == b"" and list(tmp_path.iterdir()) == [db]


def test_reading_commands_leave_a_good_database_byte_for_byte(
        files: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "good.db"
    shutil.copy(files["good"], db)
    sid = peek(db, "SELECT sid FROM st_sessions")[0][0]
    before = db.read_bytes()
    for cmd in READERS:
        args = [sid if a == "SID" else a for a in cmd]
        assert invoke(*args, "--db", str(db)).exit_code == 0
    assert db.read_bytes() == before


def test_a_read_only_file_is_a_store_code(files: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    shutil.copy(files["good"], db)
    make_readonly(db)
    before = db.read_bytes()
    # In a child that file modes bind, as root too (CI runs as root).
    res = cli_unprivileged("verify", "Water boils.", "--db", str(db), cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "error: STORE_" in res.stderr and "Traceback" not in res.stderr
    assert db.read_bytes() == before


@pytest.mark.parametrize("opt,value", [("--deadline", "nan"), ("--deadline", "inf"),
                                       ("--deadline", "1e13"), ("--deadline", "-1"),
                                       ("--max-tool-calls", "99999999999999999999"),
                                       ("--max-tool-calls", "-1")])
def test_numbers_in_options_are_checked(opt: str, value: str, tmp_path: Path) -> None:
    res = invoke("verify", "Water boils.", opt, value, "--db", str(tmp_path / "n.db"))
    assert res.exit_code == 2 and "Invalid value" in res.output
    assert not (tmp_path / "n.db").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("cmd", ["verify", "start"])
def test_a_record_that_cannot_be_written_leaves_no_session(cmd: str, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    res = invoke(cmd, "Water boils.", "--record", "/dev/full", "--db", str(db))
    assert res.exit_code == 2 and "RECORD_WRITE_FAILED" in res.output
    if db.exists():
        assert peek(db, "SELECT count(*) FROM st_sessions") == [(0,)]


def test_an_unexpected_error_is_one_line_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("surprise")

    monkeypatch.setattr("claimfsm.cli.skill.mermaid", boom)
    res = invoke("diagram")
    assert res.exit_code == 2 and "error: INTERNAL: RuntimeError: surprise" in res.output


@pytest.mark.parametrize("cmd", [["show", "\udcff\udcfe"], ["verify", "caf\udce9 is hot"],
                                 ["history", "x\ud800"]])
def test_text_arguments_must_be_valid_utf8(cmd: list[str], tmp_path: Path) -> None:
    res = invoke(*cmd, "--db", str(tmp_path / "u.db"))
    assert res.exit_code == 2 and "BAD_INPUT" in res.output and "UTF-8" in res.output
    assert not (tmp_path / "u.db").exists()
