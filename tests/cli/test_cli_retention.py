"""``claimfsm delete``, ``prune``, ``sessions --deleted`` and ``fsck`` after deletions, on a
SQLite file and on PostgreSQL: forks keep their history, export and strict replay;
fsck stays clean and lists the tombstones; a dry run writes nothing; a bad date is a
code naming the option."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "claimfsm.db")
    url: str = request.getfixturevalue("pg_url")
    return url


def _verify(db: str, claim: str) -> str:
    res = run("verify", claim, "--db", db, "--json")
    assert res.exit_code == 0, res.output
    sid: str = orjson.loads(res.output)["sid"]
    return sid


def test_delete_keeps_forks_whole_and_fsck_clean(db: str, tmp_path: Path) -> None:
    parent = _verify(db, "Sydney is the capital of Australia.")
    other = _verify(db, "Honey never spoils.")
    fork = run("fork", parent, "--at", "4", "--db", db).output.strip()
    assert run("step", fork, "--db", db).exit_code == 0
    record = tmp_path / "fork.jsonl"
    history = run("history", fork, "--db", db, "--json").output
    assert run("export", fork, "--db", db, "-o", str(record)).exit_code == 0
    exported = record.read_bytes()
    head = orjson.loads(run("show", parent, "--db", db, "--json").output)

    res = run("delete", parent, "--actor", "alice", "--db", db, "--json")
    assert res.exit_code == 0, res.output
    stone = orjson.loads(res.output)
    assert {k: stone[k] for k in ("sid", "actor", "head", "fsm")} == {
        "sid": parent, "actor": "alice", "head": head["rev"], "fsm": "DONE"}
    assert len(stone["last_hash"]) == 64 and stone["deleted_at"].startswith("20")

    # The fork reads, exports and replays exactly as before.
    assert run("history", fork, "--db", db, "--json").output == history
    assert run("export", fork, "--db", db, "-o", str(record)).exit_code == 0
    assert record.read_bytes() == exported
    replayed = run("replay", str(record))
    assert replayed.exit_code == 0 and "(strict): ok" in replayed.output
    for target in (parent,):
        res = run("show", target, "--db", db, "--json")
        assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "UNKNOWN_SESSION"

    res = run("fsck", "--db", db, "--json")
    report = orjson.loads(res.output)
    assert res.exit_code == 0 and report["ok"] and report["problems"] == []
    assert report["sessions"] == 2 and [t["sid"] for t in report["deleted"]] == [parent]
    assert report["deleted"][0] == stone
    text = run("fsck", "--db", db).output
    assert f"deleted {parent}: at {stone['deleted_at']} by alice" in text
    assert text.strip().endswith("1 deleted")
    listed = orjson.loads(run("sessions", "--deleted", "--db", db, "--json").output)
    assert listed == {"items": [stone]}
    names = [s["sid"] for s in orjson.loads(run("sessions", "--db", db, "--json").output)["items"]]
    assert names == [fork, other]

    again = run("delete", parent, "--db", db)
    assert again.exit_code == 2 and "UNKNOWN_SESSION" in again.output
    assert run("compact", "--db", db).exit_code == 0
    assert run("fsck", "--db", db).exit_code == 0
    assert run("history", fork, "--db", db, "--json").output == history


def test_prune_deletes_only_finished_sessions(db: str) -> None:
    done = [_verify(db, "Sydney is the capital of Australia."), _verify(db, "Honey never spoils.")]
    running = run("start", "NASA landed on the Moon in 1969.", "--db", db).output.strip()
    assert run("step", running, "--db", db).exit_code == 0

    res = run("prune", "--finished-before", "2000-01-01", "--db", db, "--json")
    assert res.exit_code == 0 and orjson.loads(res.output)["matched"] == 0

    dry = orjson.loads(run("prune", "--finished-before", "2999-01-01", "--dry-run",
                           "--db", db, "--json").output)
    assert dry["dry_run"] and dry["deleted"] == 0 and sorted(dry["sessions"]) == sorted(done)
    assert orjson.loads(run("sessions", "--deleted", "--db", db, "--json").output) == {"items": []}

    res = run("prune", "--finished-before", "2999-01-01", "--actor", "retention", "--db", db,
              "--json")
    assert res.exit_code == 0, res.output
    report = orjson.loads(res.output)
    assert (report["matched"], report["deleted"], report["skipped"]) == (2, 2, {})
    assert report["states"] == ["DONE", "FAILED"]
    left = orjson.loads(run("sessions", "--db", db, "--json").output)["items"]
    assert [s["sid"] for s in left] == [running]
    stones = orjson.loads(run("sessions", "--deleted", "--db", db, "--json").output)["items"]
    assert sorted(t["sid"] for t in stones) == sorted(done)
    assert {t["actor"] for t in stones} == {"retention"}
    assert run("fsck", "--db", db).exit_code == 0
    assert run("step", running, "--db", db).exit_code == 0  # still running, still steps


def test_a_dry_run_changes_no_byte(tmp_path: Path) -> None:
    db = str(tmp_path / "claimfsm.db")
    _verify(db, "Sydney is the capital of Australia.")
    run("sessions", "--db", db)  # the listing fills its catalog: done before the snapshot
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    res = run("prune", "--finished-before", "2999-01-01", "--dry-run", "--db", db)
    assert res.exit_code == 0 and "would be deleted; nothing was written" in res.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "2026-02-30", "", "  ",
                                   "2026-11-25T25:00:00", "20261125"])
def test_a_bad_date_is_a_code_naming_the_option(tmp_path: Path, value: str) -> None:
    db = str(tmp_path / "claimfsm.db")
    _verify(db, "Honey never spoils.")
    for extra in ((), ("--json",)):
        res = run("prune", "--finished-before", value, "--db", db, *extra)
        assert res.exit_code == 2
        if extra:
            error = orjson.loads(res.output)["error"]
            assert error["code"] == "BAD_INPUT" and error["msg"].startswith("--finished-before:")
        else:
            assert res.output.startswith("error: BAD_INPUT: --finished-before:")
    assert orjson.loads(run("sessions", "--db", db, "--json").output)["items"]


def test_commands_refuse_a_missing_store_and_a_bad_actor(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    for args in (("delete", "x"), ("prune", "--finished-before", "2026-01-01")):
        res = run(*args, "--db", str(missing))
        assert res.exit_code == 2 and "UNKNOWN_DB" in res.output
    assert not missing.exists()
    db = str(tmp_path / "claimfsm.db")
    sid = _verify(db, "Honey never spoils.")
    res = run("delete", sid, "--actor", " ", "--db", db)
    assert res.exit_code == 2 and "BAD_INPUT: --actor" in res.output
    assert run("show", sid, "--db", db).exit_code == 0
