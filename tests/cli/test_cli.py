"""The CLI end to end: a full session step by step, verify, skill, ingest, diagram."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.engine.machine import DEFAULT_MACHINE, mermaid

SEED_002_IN = (b'{"claims":[{"id":"s1","c":"NASA landed on the Moon in 1969."}],'
               b'"st":{"sid":"A1","rev":5,"fsm":"PARSE_CLAIM"},"hints":null}')
SEED_002_OUT = (b'{"s":"ok","d":{"plans":[{"id":"s1","q":["NASA Moon landing 1969"],'
                b'"src":["wiki","web"],"lim":4}],"sp":{"rev":6,"fsm":"RETRIEVAL"}},'
                b'"e":null,"rb":"none"}')


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


def as_json(result: Result) -> object:
    return orjson.loads(result.output)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def test_full_session_step_by_step_show_history_rollback_fork(db: str) -> None:
    sid = run("start", "NASA landed on the Moon in 1969.", "--db", db).output.strip()
    seen = ["PARSE_CLAIM"]
    for _ in range(40):
        res = run("step", sid, "--db", db, "--json")
        assert res.exit_code == 0, res.output
        body = as_json(res)
        assert isinstance(body, dict) and body["committed"] is True
        seen.append(body["after"])
        if body["after"] == "DONE":
            break
    assert seen[-1] == "DONE"
    assert [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]] == [
        "PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE", "DONE"]
    done = run("step", sid, "--db", db)
    assert done.exit_code == 2 and "SESSION_FINISHED" in done.output

    hist = as_json(run("history", sid, "--db", db, "--json"))
    assert isinstance(hist, list) and [r["rev"] for r in hist] == list(range(len(seen)))
    assert any(e.get("type") == "ToolInvoked" for r in hist for e in r["events"])

    show = as_json(run("show", sid, "--db", db, "--json", "--rev", "1"))
    assert isinstance(show, dict) and show["fsm"] == "RETRIEVAL" and show["state"]["plans"]

    back = as_json(run("rollback", sid, "--to", "1", "--db", db, "--json"))
    assert isinstance(back, dict) and back["rev"] == len(seen) and back["fsm"] == "RETRIEVAL"
    head = as_json(run("show", sid, "--db", db, "--json"))
    first = as_json(run("show", sid, "--db", db, "--json", "--rev", "1"))
    assert isinstance(head, dict) and isinstance(first, dict)
    # Everything comes back but what the session spent (runtime stays the head's).
    spent = head["state"].pop("runtime")
    assert spent["budget"]["calls"] > first["state"].pop("runtime").get("budget", {}).get(
        "calls", 0)
    assert head["state"] == first["state"]

    forked = run("fork", sid, "--at", "2", "--db", db).output.strip()
    assert forked and forked != sid
    fhist = as_json(run("history", forked, "--db", db, "--json"))
    assert isinstance(fhist, list) and [r["rev"] for r in fhist] == [0, 1, 2, 3]
    assert fhist[3]["events"] == [{"type": "Forked", "from": {"sid": sid, "rev": 2},
                                   "changes": []}]


def test_verify_json_has_the_documented_shape(db: str) -> None:
    res = run("verify", "Sydney is the capital of Australia.", "--db", db, "--json")
    assert res.exit_code == 0
    body = as_json(res)
    assert isinstance(body, dict)
    assert list(body) == ["sid", "verdict", "rev", "fsm", "subclaims", "status", "waiting",
                          "provenance"]
    assert body["status"] == "FINISHED" and body["provenance"] == "engine"
    assert body["fsm"] == "DONE" and body["verdict"] == "REFUTES"
    sub = body["subclaims"][0]
    assert list(sub) == ["id", "c", "verdict", "evidence"]
    assert sub["evidence"] and list(sub["evidence"][0]) == ["id", "text", "source", "score"]


def test_verify_human_output_shows_each_state(db: str) -> None:
    out = run("verify", "NASA landed on the Moon in 1969.", "--db", db).output
    for state in ("PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE", "DONE"):
        assert state in out
    assert "verdict: SUPPORTS" in out


def test_skill_reproduces_the_seed_example_and_exits_zero() -> None:
    res = run("skill", "evidence_query_plan", stdin=SEED_002_IN)
    assert res.exit_code == 0 and res.output.strip().encode() == SEED_002_OUT


@pytest.mark.parametrize(
    ("name", "stdin", "code", "field"),
    [
        ("evidence_query_plan", b"{not json", "BAD_INPUT", "(root)"),
        ("evidence_query_plan", b'{"claims":[{"id":"s1"}],"st":{"sid":"A","rev":0,"fsm":"P"}}',
         "BAD_INPUT", "claims.0.c"),
        ("evidence_query_plan", b'{"claims":[],"st":{"sid":"A","rev":0,"fsm":"P"}}',
         "NO_CLAIMS", ""),
        ("tool_request_compose", b'{"plans":[],"st":{"sid":"A","rev":0,"fsm":"R"}}',
         "NO_PLANS", ""),
        ("tool_request_compose",
         b'{"plans":[{"id":"s1","q":["x"],"src":["tv"],"lim":3}],"st":{"sid":"A","rev":0,'
         b'"fsm":"R"}}', "BAD_SRC", ""),
        ("no_such_skill", b"{}", "UNKNOWN_SKILL", "name"),
    ],
)
def test_skill_errors_are_envelopes_with_exit_one(name: str, stdin: bytes, code: str,
                                                  field: str) -> None:
    res = run("skill", name, stdin=stdin)
    assert res.exit_code == 1
    env = as_json(res)
    assert isinstance(env, dict) and env["s"] == "error" and env["d"] is None
    assert env["e"]["code"] == code and field in env["e"]["msg"]


def test_ingest_reports_bad_lines_and_keeps_the_good_ones(db: str, tmp_path: Path) -> None:
    f = tmp_path / "docs.jsonl"
    f.write_text(
        '{"id":"z1","title":"Zorblax","text":"Zorblax is a purple moon of Quux."}\n'
        '{"id":"z2","title":"broken"\n'
        '{"id":"z3","title":"Quux","text":""}\n'
        '{"id":"z4","title":"Quux","text":"Quux is a gas giant."}\n'
    )
    res = run("ingest", str(f), "--db", db, "--source", "web", "--json")
    body = as_json(res)
    assert res.exit_code == 0 and isinstance(body, dict)
    assert body["added"] == 2 and [e["line"] for e in body["errors"]] == [2, 3]
    assert "text" in body["errors"][1]["msg"]
    out = as_json(run("verify", "Zorblax is a purple moon.", "--db", db, "--json"))
    assert isinstance(out, dict)
    ids = [e["id"] for s in out["subclaims"] for e in s["evidence"]]
    assert any(i.startswith("z1") for i in ids)


def test_unknown_session_is_a_clean_error(db: str) -> None:
    assert run("start", "Water boils at 100 degrees.", "--db", db).exit_code == 0
    res = run("show", "nope", "--db", db)
    assert res.exit_code == 2 and "UNKNOWN_SESSION" in res.output
    res = run("show", "nope", "--db", db, "--json")
    body = as_json(res)
    assert isinstance(body, dict) and body["error"]["code"] == "UNKNOWN_SESSION"


def test_diagram_prints_the_generated_mermaid() -> None:
    assert run("diagram").output == mermaid(DEFAULT_MACHINE)


def test_console_script_runs_without_traceback(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("claimfsm")
    proc = subprocess.run([str(exe), "show", "missing", "--db", str(tmp_path / "x.db")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "UNKNOWN_DB" in proc.stderr


def test_demo_verifies_every_bundled_claim_as_expected(db: str) -> None:
    from claimfsm.engine.runtime import FIXTURES

    claims = orjson.loads((FIXTURES / "demo_claims.json").read_bytes())
    assert {c["expected"] for c in claims} >= {"SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"}
    res = run("demo", "--db", db)
    assert res.exit_code == 0
    assert f"{len(claims)}/{len(claims)} demo claims as expected" in res.output
