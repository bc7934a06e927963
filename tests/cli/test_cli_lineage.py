"""Lineage from the command line: `fork` with another profile (a what-if), `show` and
`sessions` naming the parent (text and --json), `report --html` with the lineage, and a
what-if that cannot run refused with its code and nothing stored."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from tests.support.stance_data import write_dataset

CLAIM = "NASA landed on the Moon in 1969."


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from claimfsm.eval.data import read_dataset
    from claimfsm.eval.train.judge import train

    root = tmp_path_factory.mktemp("model")
    train(read_dataset(write_dataset(root / "train.jsonl")), root / "m.npz", folds=4)
    return root / "m.npz"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def _verified(db: str) -> str:
    res = run("verify", CLAIM, "--db", db, "--json")
    assert res.exit_code == 0, res.output
    return str(orjson.loads(res.output)["sid"])


def test_a_what_if_fork_with_the_learned_judge(db: str, model_path: Path,
                                               tmp_path: Path) -> None:
    sid = _verified(db)
    hist = orjson.loads(run("history", sid, "--db", db, "--json").output)
    at = next(r["rev"] for r in hist if r["fsm"] == "VERIFY")
    made = run("fork", sid, "--at", str(at), "--stance-model", str(model_path), "--db", db,
               "--json")
    assert made.exit_code == 0, made.output
    fork = orjson.loads(made.output)
    assert fork["rev"] == at + 1 and fork["profile"]["judge"] == "learned"
    changes = fork["events"][0]["changes"]
    assert [c["field"] for c in changes] == ["profile.judge", "profile.stance_model"]
    while orjson.loads(run("step", fork["sid"], "--db", db, "--json").output)["after"] != "DONE":
        pass
    shown = orjson.loads(run("show", fork["sid"], "--db", db, "--json").output)
    assert shown["fsm"] == "DONE" and shown["profile"]["judge"] == "learned"
    assert shown["forked_from"] == {"sid": sid, "rev": at, "at": fork["ts"], "changes": changes}
    text = run("show", fork["sid"], "--db", db).output
    assert f"forked from {sid}@{at} at {fork['ts']} (judge: lexical -> learned" in text
    parent = run("show", sid, "--db", db).output
    assert f"forks: {fork['sid']}@{at}" in parent
    listed = orjson.loads(run("sessions", "--db", db, "--json").output)["items"]
    assert listed[0]["sid"] == fork["sid"]
    assert listed[0]["forked_from"] == {"sid": sid, "rev": at, "at": fork["ts"]}
    assert listed[1]["forked_from"] is None
    table = run("sessions", "--db", db).output.splitlines()
    assert "forked from" in table[0] and f"{sid}@{at}" in table[1]
    assert " - " in table[2]
    html = tmp_path / "r.html"
    assert run("report", fork["sid"], "--db", db, "--html", str(html)).exit_code == 0
    assert f"Forked from <code>{sid}</code>@{at}" in html.read_text(encoding="utf-8")


def test_a_plain_fork_changes_nothing_but_records_its_parent(db: str) -> None:
    sid = _verified(db)
    fork = orjson.loads(run("fork", sid, "--at", "2", "--db", db, "--json").output)
    assert fork["events"] == [{"type": "Forked", "from": {"sid": sid, "rev": 2},
                               "changes": []}]
    assert fork["profile"] == {"retrieval": "lexical", "judge": "lexical", "stance_model": None}
    assert "what if" not in run("show", fork["sid"], "--db", db).output


def test_a_what_if_that_cannot_run_stores_nothing(db: str, tmp_path: Path) -> None:
    sid = _verified(db)
    gone = run("fork", sid, "--at", "2", "--stance-model", str(tmp_path / "no.npz"),
               "--db", db, "--json")
    assert gone.exit_code == 2
    assert orjson.loads(gone.output)["error"]["code"] == "MODEL_NOT_FOUND"
    bad = run("fork", sid, "--at", "2", "--judge", "learned", "--db", db)
    assert bad.exit_code == 2 and "BAD_PROFILE" in bad.output
    assert len(orjson.loads(run("sessions", "--db", db, "--json").output)["items"]) == 1
