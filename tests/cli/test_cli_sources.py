"""``[sources.NAME]`` in claimfsm.toml, end to end: a claim verified with its evidence
from a real HTTP server, its record replayed strictly with the server gone, and a bad
table refused with the field named."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from tests.support.search_server import start

TOML = """
[sources.wiki]
kind = "mediawiki"
url = "{url}/w/api.php"
timeout = 5

[sources.web]
kind = "opensearch"
url = "{url}/docs/_search"

[sources.news]
kind = "json"
url = "{url}/json/search?q={{q}}&n={{lim}}"
hits = "results"
fetch_url = "{url}/json/doc/{{id}}"
fields = {{ id = "key", title = "name", text = "body", score = "relevance" }}
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_verify_reads_http_sources_and_replays_without_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served = start()
    monkeypatch.chdir(tmp_path)
    try:
        (tmp_path / "claimfsm.toml").write_text(TOML.format(url=served.url))
        res = run("verify", "NASA landed people on the Moon in 1969.", "--db", "s.db",
                  "--record", "v.jsonl", "--json")
        assert res.exit_code == 0, res.output
        assert orjson.loads(res.output)["fsm"] == "DONE"
    finally:
        served.stop()
    lines = [orjson.loads(x) for x in (tmp_path / "v.jsonl").read_bytes().splitlines()]
    calls = [c for line in lines if line.get("t") == "step" for c in line["calls"]]
    fetched = {c["args"].get("doc_id", "") for c in calls if c["tool"] == "page_fetch"}
    assert any(d.startswith("wiki|") for d in fetched), fetched
    assert all(c["ok"] for c in calls if c["tool"] == "search")
    (tmp_path / "claimfsm.toml").unlink()
    res = run("replay", "v.jsonl")  # strict: every answer from the record, no network
    assert res.exit_code == 0 and "ok" in res.output, res.output


def test_a_bad_source_table_is_refused_with_its_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claimfsm.toml").write_text('[sources.wiki]\nkind = "mediawiki"\n'
                                            'url = "wiki.example/api.php"\n')
    res = run("verify", "The Moon is made of cheese.", "--db", "s.db", "--json")
    assert res.exit_code == 2
    err = orjson.loads(res.output)["error"]
    assert err["code"] == "BAD_CONFIG" and "sources.wiki.url" in err["msg"]


def test_a_profile_key_beside_the_sources_still_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claimfsm.toml").write_text('retrieval = "hybridx"\n[sources.wiki]\n'
                                            'kind = "mediawiki"\nurl = "http://h/api.php"\n')
    res = run("verify", "The Moon is made of cheese.", "--db", "s.db", "--json")
    assert res.exit_code == 2 and orjson.loads(res.output)["error"]["code"] == "BAD_PROFILE"
