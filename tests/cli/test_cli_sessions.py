"""``claimfsm sessions``: the listing of a store, newest first, filtered and paged, in
text and in the JSON shape of the web inspector's ``GET /api/v1/sessions``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.state.catalog import SummaryQuery


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    path = str(tmp_path_factory.mktemp("sessions") / "s.db")
    claims = ["NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin.",
              "Honey never spoils.", "The Eiffel Tower was completed in 1889."]
    with Engine.open(path) as eng:
        sids = [eng.start(claim).sid for claim in claims]
        eng.driver.run(sids[1])  # one finished session, with a verdict
    return path, sids


def test_lists_newest_first_with_state_verdict_and_claim(db: tuple[str, list[str]]) -> None:
    path, sids = db
    res = run("sessions", "--db", path)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split() == ["#", "session", "state", "verdict", "revs", "updated", "version",
                                "forked", "from", "claim"]
    assert [line.split()[1] for line in lines[1:]] == sids[::-1]
    done = next(line for line in lines if sids[1] in line)
    assert " DONE " in done and "The Eiffel Tower is in Berlin." in done
    assert "PARSE_CLAIM" in lines[1] and lines[1].split()[3] == "-"  # no verdict yet


def test_json_is_the_store_listing(db: tuple[str, list[str]]) -> None:
    path, _ = db
    res = run("sessions", "--db", path, "--json", "-q", "eiffel", "--limit", "1")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    with Engine.open(path, config=EngineConfig(seed=False)) as eng:
        expected = eng.store.summaries(SummaryQuery(q="eiffel", limit=1)).to_json()
        for item in expected["items"]:  # plus each session's machine version and parent
            item["version"] = eng.driver.version
            item["forked_from"] = None
    assert body == expected
    assert [item["claim"] for item in body["items"]] == ["The Eiffel Tower was completed in 1889."]
    following = orjson.loads(run("sessions", "--db", path, "--json", "-q", "eiffel",
                                 "--before", str(body["next"])).output)
    assert [item["claim"] for item in following["items"]] == ["The Eiffel Tower is in Berlin."]
    assert following["next"] is None


def test_filters_by_state_and_verdict(db: tuple[str, list[str]]) -> None:
    path, sids = db
    done = orjson.loads(run("sessions", "--db", path, "--json", "--state", "DONE").output)
    assert [item["sid"] for item in done["items"]] == [sids[1]]
    label = done["items"][0]["verdict"]
    assert label is not None
    by_verdict = orjson.loads(run("sessions", "--db", path, "--json",
                                  "--verdict", label.lower()).output)
    assert [item["sid"] for item in by_verdict["items"]] == [sids[1]]
    none = orjson.loads(run("sessions", "--db", path, "--json", "--verdict", "none").output)
    assert {item["sid"] for item in none["items"]} == set(sids) - {sids[1]}
    assert run("sessions", "--db", path, "--state", "NOPE").output == "no sessions match\n"


def test_the_store_is_only_read(db: tuple[str, list[str]]) -> None:
    path, _ = db
    # A writable close checkpoints the log.
    Engine.open(path, config=EngineConfig(seed=False)).close()

    wal = Path(path + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    before = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert run("sessions", "--db", path).exit_code == 0
    # nothing written: the file is as it was and the log (SQLite may create it) is empty
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == before
    assert not wal.exists() or wal.stat().st_size == 0


def test_bad_input_gets_a_code_and_names_the_option(db: tuple[str, list[str]],
                                                    tmp_path: Path) -> None:
    path, _ = db
    res = run("sessions", "--db", path, "-q", "x" * 1001)
    assert res.exit_code == 2 and "BAD_INPUT: --query:" in res.output
    res = run("sessions", "--db", str(tmp_path / "missing.db"))
    assert res.exit_code == 2 and "error: " in res.output and "Traceback" not in res.output
    res = run("sessions", "--db", path, "--limit", "0")
    assert res.exit_code == 2 and "--limit" in res.output
