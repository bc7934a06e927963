"""Every session command on a ``postgresql://`` URL: the same behaviour as on a file, the
evidence index in the file of the URL's ``index`` parameter, clean errors for a server
that is not there, a URL without an index to ingest into, and an empty database that a
read-only command must not turn into a store.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.state.errors import StoreError
from claimfsm.state.open import locate


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_session_commands_on_a_url(pg_url: str, tmp_path: Path) -> None:
    res = run("verify", "Sydney is the capital of Australia.", "--db", pg_url, "--json")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    assert body["fsm"] == "DONE" and body["verdict"] == "REFUTES"
    sid = run("start", "NASA landed on the Moon in 1969.", "--db", pg_url).output.strip()
    for _ in range(40):
        step = orjson.loads(run("step", sid, "--db", pg_url, "--json").output)
        if step["after"] == "DONE":
            break
    hist = orjson.loads(run("history", sid, "--db", pg_url, "--json").output)
    assert hist[-1]["fsm"] == "DONE" and [r["rev"] for r in hist] == list(range(len(hist)))
    back = orjson.loads(run("rollback", sid, "--to", "1", "--db", pg_url, "--json").output)
    assert back["rev"] == len(hist) and back["fsm"] == "RETRIEVAL"
    forked = run("fork", sid, "--at", "2", "--db", pg_url).output.strip()
    shown = orjson.loads(run("show", forked, "--db", pg_url, "--json").output)
    assert shown["rev"] == 3 and shown["sid"] == forked
    assert shown["forked_from"]["sid"] == sid and shown["forked_from"]["rev"] == 2
    record = tmp_path / "s.jsonl"
    assert run("export", sid, "--db", pg_url, "-o", str(record)).exit_code == 0
    assert record.read_bytes().count(b"\n") >= len(hist)
    fsck = orjson.loads(run("fsck", "--db", pg_url, "--json").output)
    assert fsck["ok"] and fsck["sessions"] == 3
    listed = orjson.loads(run("sessions", "--db", pg_url, "--json").output)
    assert [item["sid"] for item in listed["items"]][:2] == [forked, sid]
    assert listed["items"][0]["revisions"] == 4 and listed["next"] is None
    assert listed["items"][0]["forked_from"]["sid"] == sid
    done = orjson.loads(run("sessions", "--db", pg_url, "--json", "--verdict", "refutes").output)
    assert [item["claim"] for item in done["items"]] == ["Sydney is the capital of Australia."]
    assert run("compact", "--db", pg_url).exit_code == 0


def test_the_index_parameter_names_the_evidence_file(pg_url: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "z1", "title": "Zorblax", "text": "Zorblax is a blue moon of '
                    'Quintar, discovered in 2091."}\n')
    index = tmp_path / "evidence.db"
    url = f"{pg_url}&index={index}"
    assert locate(url).store == pg_url and locate(url).index == str(index)
    res = run("ingest", str(docs), "--db", url, "--json")
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.output)["added"] == 1 and index.is_file()
    # Without the parameter there is no file to ingest into: a clear error, nothing run.
    res = run("ingest", str(docs), "--db", pg_url, "--json")
    assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "NO_INDEX"
    res = run("verify", "Zorblax is a moon of Quintar.", "--db", url, "--json")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    cited = [e for sub in body["subclaims"] for e in sub.get("evidence", [])]
    assert any("Zorblax" in orjson.dumps(e).decode() for e in cited), body


def test_read_only_commands_do_not_create_a_store(pg_url: str) -> None:
    import psycopg

    for args in (("fsck",), ("compact",), ("show", "x"), ("history", "x"), ("step", "x")):
        res = run(*args, "--db", pg_url, "--json")
        assert res.exit_code == 2, (args, res.output)
        assert orjson.loads(res.stdout)["error"]["code"] == "UNKNOWN_DB", args
    with psycopg.connect(pg_url) as conn:  # no st_ table was created in the schema
        tables = conn.execute("SELECT count(*) FROM information_schema.tables"
                              " WHERE table_schema = current_schema()").fetchone()
    assert tables == (0,)
    res = run("verify", "Paris is in France.", "--db", pg_url, "--json")
    assert res.exit_code == 0  # a writing command creates the tables
    assert orjson.loads(run("fsck", "--db", pg_url, "--json").output)["ok"]


def test_an_unreachable_server_is_a_clean_error() -> None:
    import importlib.util

    from tests.support.components import missing

    if importlib.util.find_spec("psycopg") is None:
        missing("PostgreSQL", "psycopg is not installed (pip install -e '.[postgres]')")
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    for args in (("show", "x"), ("fsck",), ("verify", "Paris is in France.")):
        res = run(*args, "--db", url, "--json")
        assert res.exit_code == 2, res.output
        error = orjson.loads(res.output)["error"]
        assert error["code"] == "STORE_UNAVAILABLE" and "127.0.0.1:1" in error["msg"]


def test_an_empty_index_parameter_is_refused() -> None:
    with pytest.raises(StoreError, match="index"):
        locate("postgresql://u@h/db?index=")
    res = run("show", "x", "--db", "postgresql://u@h/db?index=", "--json")
    assert res.exit_code == 2 and "index" in orjson.loads(res.output)["error"]["msg"]
