"""``--actor NAME`` on the commands that write sessions (start, step, verify, rollback,
fork): the name is recorded in each revision they commit, a `--record` file carries it
and replays exactly; without it nothing is recorded; a bad name is BAD_INPUT naming
``actor`` and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.state.open import open_store

CLAIM = "NASA landed on the Moon in 1969."


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _actors(db: str, sid: str) -> list[list[str]]:
    store = open_store(db)
    try:
        return [[str(e["actor"]) for e in rev.events if "actor" in e]
                for rev in store.history(sid)]
    finally:
        store.close()


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return orjson.loads(result.output)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def test_actor_on_start_step_rollback_and_fork(db: str, tmp_path: Path) -> None:
    sid = _json(run("start", CLAIM, "--db", db, "--json", "--actor", "alice"))["sid"]
    record = tmp_path / "s.jsonl"
    step = _json(run("step", sid, "--db", db, "--json", "--actor", "bob",
                     "--record", str(record)))
    assert step["committed"] is True
    run("step", sid, "--db", db, "--json")  # no --actor: nothing recorded
    assert _actors(db, sid) == [["alice"], ["bob"], []]
    back = _json(run("rollback", sid, "--to", "1", "--db", db, "--json", "--actor", "carol"))
    fork = _json(run("fork", sid, "--at", "2", "--db", db, "--json", "--actor", "dave"))
    assert _actors(db, sid)[back["rev"]] == ["carol"]
    assert _actors(db, fork["sid"]) == [["alice"], ["bob"], [], ["dave"]]
    lines = [orjson.loads(x) for x in record.read_bytes().splitlines()]
    steps = [x for x in lines if x["t"] == "step"]
    assert [s.get("actor") for s in steps] == ["bob"]
    replayed = run("replay", str(record), "--json")
    assert replayed.exit_code == 0 and orjson.loads(replayed.output)["ok"] is True, \
        replayed.output


def test_verify_records_the_actor_in_every_revision(db: str) -> None:
    out = _json(run("verify", CLAIM, "--db", db, "--json", "--actor", "ci-bot"))
    sid = out["sid"]
    actors = _actors(db, sid)
    assert len(actors) > 3 and actors == [["ci-bot"]] * len(actors)
    out = _json(run("verify", CLAIM, "--db", db, "--json"))
    assert _actors(db, out["sid"]) == [[]] * len(_actors(db, out["sid"]))


@pytest.mark.parametrize("bad", ["", "  ", "x" * 201])
@pytest.mark.parametrize("command", ["step", "fork", "rollback", "verify", "start"])
def test_a_bad_actor_is_bad_input_and_writes_nothing(db: str, command: str, bad: str) -> None:
    sid = _json(run("start", CLAIM, "--db", db, "--json"))["sid"]
    args = {"step": ["step", sid], "fork": ["fork", sid, "--at", "0"],
            "rollback": ["rollback", sid, "--to", "0"], "verify": ["verify", CLAIM],
            "start": ["start", CLAIM]}[command]
    res = run(*args, "--db", db, "--json", "--actor", bad)
    assert res.exit_code == 2, res.output
    err = orjson.loads(res.output)["error"]
    assert err["code"] == "BAD_INPUT" and "actor" in err["msg"]
    sessions = _json(run("sessions", "--db", db, "--json"))
    assert [s["sid"] for s in sessions["items"]] == [sid]
    assert _actors(db, sid) == [[]]
