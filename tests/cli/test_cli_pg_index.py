"""The evidence index in PostgreSQL from the command line: ``ingest --index
postgresql://...`` fills it, ``--db postgresql://...?index=postgresql://...`` verifies
with it (sessions and evidence both in the server), replay reads it, and an unreachable
index is a clean error."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import orjson
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.skills.tools.index_pg import PgEvidenceIndex
from tests.support.pg import PgServer

ZORBLAX = ('{"id": "z1", "title": "Zorblax", "text": "Zorblax is a blue moon of Quintar, '
           'discovered in 2091."}\n{"id": "z2", "title": "Quintar", "text": "Quintar is a '
           'gas giant with four moons."}\n')


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_ingest_into_postgres_and_verify_with_it(pg_url: str, pg_server: PgServer,
                                                  tmp_path: Path) -> None:
    index_url = pg_server.new_schema()
    docs = tmp_path / "docs.jsonl"
    docs.write_text(ZORBLAX)
    res = run("ingest", str(docs), "--index", index_url, "--json")
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.output)["added"] == 2
    again = orjson.loads(run("ingest", str(docs), "--index", index_url, "--json").output)
    assert again["added"] == 0 and again["unchanged"] == 2
    with PgEvidenceIndex.open(index_url) as idx:
        assert idx.count_documents() == 2 and idx.search("Zorblax")[0].doc_id == "z1"
    db = f"{pg_url}&index={quote(index_url, safe='')}"
    rec = tmp_path / "z.jsonl"
    res = run("verify", "Zorblax is a moon of Quintar.", "--db", db, "--record", str(rec),
              "--json")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    cited = orjson.dumps([e for sub in body["subclaims"] for e in sub.get("evidence", [])])
    assert b"Zorblax" in cited, body
    with PgEvidenceIndex.open(index_url) as idx:
        assert idx.count_documents() == 2  # an index with documents is not seeded
    assert run("replay", str(rec)).exit_code == 0
    # The same through --db's index parameter.
    more = tmp_path / "more.jsonl"
    more.write_text('{"id": "z3", "title": "Blorp", "text": "Blorp orbits Quintar."}\n')
    res = run("ingest", str(more), "--db", db, "--json")
    assert res.exit_code == 0 and orjson.loads(res.output)["added"] == 1, res.output


def test_an_unreachable_index_is_a_clean_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(ZORBLAX)
    url = "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2"
    res = run("ingest", str(docs), "--index", url, "--json")
    assert res.exit_code == 2, res.output
    err = orjson.loads(res.output)["error"]
    assert err["code"] == "STORE_UNAVAILABLE" and "index" in err["msg"]
    assert "Traceback" not in res.output
