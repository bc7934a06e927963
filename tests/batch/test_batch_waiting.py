"""``claimfsm batch --review always``: claims that end waiting in REVIEW are reported as
``waiting`` (not failed) in the summary and --out, a re-run does not start them again,
and a later input finishes them (the next re-run skips them as DONE)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.fsck import fsck
from claimfsm.state.open import open_store

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_waiting_claims_are_counted_kept_and_finished_by_input(tmp_path: Path) -> None:
    src, db, out = tmp_path / "c.jsonl", str(tmp_path / "b.db"), tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps({"id": f"c{i}", "claim": DEMO[i]}) + "\n"
                           for i in range(3)))
    args = ("batch", str(src), "--db", db, "--workers", "0", "--out", str(out),
            "--review", "always", "--json")
    res = run(*args)
    assert res.exit_code == 3, res.output
    summary = orjson.loads(res.output)
    assert (summary["waiting"], summary["failed"], summary["done"]) == (3, 0, 0)
    got = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert {(g["status"], g["fsm"]) for g in got} == {("waiting", "REVIEW")}
    with open_store(db) as store:
        revisions = {s: store.head(s).rev for s in store.sessions()}
    again = orjson.loads(run(*args).output)
    assert again["waiting"] == 3 and again["done"] == 0
    with open_store(db) as store:  # not started again: not one revision more
        assert {s: store.head(s).rev for s in store.sessions()} == revisions
    for sid in revisions:
        assert run("input", sid, "--db", db, "--json", '{"decision": "approve"}').exit_code == 0
    final = orjson.loads(run(*args).output)
    assert final["skipped"] == 3 and final["waiting"] == 0
    with open_store(db) as store:
        assert fsck(store).ok
