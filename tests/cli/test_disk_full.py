"""A full disk is ``STORE_FULL``, never corruption; a read-only one ``STORE_READ_ONLY``.

On a small tmpfs the test mounts (tests/support/tmpfs.py): ``verify`` and ``batch`` run
until the disk is full. The store stays at its last committed revision; every command
then works on the files as they are, on the full disk itself for the readers, and on the
files copied to a disk with space for all of them (the copy without its ``-shm``, which
is how a user copies them); and once the full disk has space again, the same command
carries on.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.state.sqlite import SQLiteStore
from tests.support.tmpfs import mounted_tmpfs, remount

_SHM = 32 * 1024  # the WAL's shared-memory file


def invoke(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and "INTERNAL" not in res.output, res.output
    assert "STORE_NOT_DATABASE" not in res.output and "STORE_CORRUPT" not in res.output
    return res


def heads(db: Path) -> dict[str, tuple[int, str]]:
    """Every session's head revision and state, read without writing."""
    with SQLiteStore(db, readonly=True) as store:
        return {sid: (store.head(sid).rev, store.head(sid).fsm) for sid in store.sessions()}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the demo corpus and one session, closed (one file)."""
    db = tmp_path_factory.mktemp("seed") / "s.db"
    assert invoke("verify", "Water boils at 100 degrees.", "--db", str(db)).exit_code == 0
    return db


def _every_command_works(db: Path, committed: dict[str, tuple[int, str]]) -> None:
    assert heads(db) == committed  # the last committed revision of every session
    sid = next(iter(committed))
    for cmd in (["fsck"], ["sessions"], ["show", sid], ["history", sid], ["export", sid],
                ["compact"], ["verify", "The Moon orbits the Earth."], ["fsck"]):
        res = invoke(*cmd, "--db", str(db))
        assert res.exit_code == 0, (cmd, res.output)
    assert invoke("fsck", "--db", str(db)).output.startswith(f"ok: {len(committed) + 1} ")


def test_verify_until_the_disk_is_full_then_every_command_works_on_the_copy(
        seed: Path, tmp_path: Path) -> None:
    size = seed.stat().st_size + _SHM + 400_000
    roomy = tmp_path / "roomy"
    roomy.mkdir()
    with mounted_tmpfs(tmp_path / "small", size) as small:
        db = small / "s.db"
        shutil.copy(seed, db)
        for n in range(200):
            res = invoke("verify", f"Water boils at {n} degrees.", "--db", str(db))
            if res.exit_code == 2:
                break
            assert res.exit_code in (0, 1), res.output
        else:
            pytest.fail("the disk never filled up")
        assert f"error: STORE_FULL: --db: {db}: the disk is full" in res.output, res.output
        committed = heads(db)
        # On the full disk: the readers read, a writer is refused with the same code and
        # changes nothing.
        assert invoke("fsck", "--db", str(db)).output.startswith("ok: ")
        sid = next(iter(committed))
        for cmd in (["sessions"], ["show", sid], ["history", sid], ["export", sid]):
            assert invoke(*cmd, "--db", str(db)).exit_code == 0, cmd
        res = invoke("verify", "Ice is cold.", "--db", str(db))
        assert res.exit_code == 2 and "error: STORE_FULL:" in res.output
        docs = tmp_path / "docs.jsonl"
        docs.write_bytes(b"".join(orjson.dumps(
            {"id": f"d{n}", "title": f"T{n}", "text": f"Document {n}: " + "word " * 4000})
            + b"\n" for n in range(60)))
        res = invoke("ingest", str(docs), "--db", str(db))  # into the evidence tables
        assert res.exit_code == 2 and "error: STORE_FULL:" in res.output, res.output
        assert heads(db) == committed
        for name in ("s.db", "s.db-wal"):
            if (small / name).exists():
                shutil.copy(small / name, roomy / name)
    _every_command_works(roomy / "s.db", committed)


def test_batch_until_the_disk_is_full_then_again_once_there_is_space(
        seed: Path, tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_bytes(b"".join(
        orjson.dumps({"id": f"c{n}", "claim": f"The Eiffel Tower was built in {1800 + n}."})
        + b"\n" for n in range(12)))
    out = tmp_path / "out.jsonl"
    args = ("batch", str(claims), "--workers", "0", "--out", str(out), "--json")
    with mounted_tmpfs(tmp_path / "small", seed.stat().st_size + _SHM + 700_000) as small:
        db = small / "s.db"
        shutil.copy(seed, db)
        res = invoke(*args, "--db", str(db))
        assert res.exit_code == 2 and '"code": "STORE_FULL"' in res.output, res.output
        committed = heads(db)
        assert len(committed) > 1  # some claims were verified before the disk filled up
        assert invoke("fsck", "--db", str(db)).output.startswith("ok: ")
        remount(small, "size=64m")  # space again: the same command resumes
        res = invoke(*args, "--db", str(db))
        assert res.exit_code == 0, res.output
        after = heads(db)
        assert len(after) == 1 + 12 and all(fsm == "DONE" for _, fsm in after.values())
        # What was committed before the disk filled up was resumed, not started again.
        assert all(sid in after for sid in committed)
        assert invoke("fsck", "--db", str(db)).output.startswith("ok: 13 sessions")


def test_a_read_only_file_system_is_store_read_only_and_readers_read(
        seed: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "T", "text": "Water boils."}\n')
    with mounted_tmpfs(tmp_path / "ro", 8 << 20) as fs:
        db = fs / "s.db"
        shutil.copy(seed, db)
        sid = next(iter(heads(db)))
        remount(fs, "ro")
        for cmd in (["verify", "Ice is cold."], ["fork", sid, "--at", "0"], ["compact"],
                    ["ingest", str(docs)]):
            res = invoke(*cmd, "--db", str(db))
            assert res.exit_code == 2 and "error: STORE_READ_ONLY: --db: " in res.output, \
                (cmd, res.output)
        for cmd in (["fsck"], ["sessions"], ["show", sid], ["history", sid], ["export", sid]):
            assert invoke(*cmd, "--db", str(db)).exit_code == 0, cmd
