"""``claimfsm batch`` with ``[sources]``: the sources the command resolved reach every
Ray worker (searches go to the HTTP server the tests start), and credentials travel as
the names of environment variables, read where each engine opens."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from claimfsm._base.errors import BadInput
from claimfsm.batch import read_claims, run_batch
from claimfsm.engine.runtime import FIXTURES
from claimfsm.engine.sources import SourceSet
from claimfsm.skills.tools.http.config import parse_sources
from claimfsm.state.open import open_store
from tests.support.search_server import start

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def _requests(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/requests", timeout=10) as resp:
        return list(orjson.loads(resp.read()))


def _claims(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "claims.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "claim": DEMO[i % len(DEMO)]}) + "\n"
                            for i in range(n)))
    return path


def test_ray_workers_search_the_configured_sources(ray_address: str, tmp_path: Path) -> None:
    served = start()
    try:
        table = {"wiki": {"kind": "mediawiki", "url": f"{served.url}/w/api.php"},
                 "web": {"kind": "opensearch", "url": f"{served.url}/docs/_search"}}
        sources = SourceSet.of(parse_sources(table))
        db = str(tmp_path / "ray.db")
        items = read_claims(_claims(tmp_path, 6))
        summary = run_batch(items, db, workers=2, sources=sources)
        assert summary.runner == "ray" and summary.ok and summary.done == 6
        asked = _requests(served.url)
    finally:
        served.stop()
    assert any("list=search" in r["path"] for r in asked)
    assert any(r["path"].endswith("/_search") for r in asked)
    with open_store(db) as store:
        hits = [h["doc_id"] for sid in store.sessions() for rec in store.head(sid).state.
                tool_results if rec.get("ok") for h in (rec.get("value") or {}).get("hits", [])]
    assert any(d.startswith("wiki|") for d in hits) and any(d.startswith("web|") for d in hits)


def test_credentials_travel_as_variable_names_and_are_read_on_the_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDENCE_KEY", "s3cret-token")
    table = {"web": {"kind": "opensearch", "url": "http://127.0.0.1:9/docs/_search",
                     "auth_env": "EVIDENCE_KEY"}}
    sources = SourceSet.of(parse_sources(table))
    assert sources is not None and b"s3cret" not in sources.text
    assert b"EVIDENCE_KEY" in sources.text
    assert sources.configs()["web"].auth_env == "EVIDENCE_KEY"
    assert SourceSet.of({}) is None
    monkeypatch.delenv("EVIDENCE_KEY")  # a worker without the variable refuses to open
    with pytest.raises(BadInput) as err:
        sources.configs()
    assert err.value.field == "sources.web.auth_env" and err.value.code == "BAD_CONFIG"


def test_the_batch_command_passes_its_config_files_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from claimfsm.cli.main import main

    served = start()
    monkeypatch.chdir(tmp_path)
    try:
        (tmp_path / "claimfsm.toml").write_text(
            f'[sources.wiki]\nkind = "mediawiki"\nurl = "{served.url}/w/api.php"\n')
        res = CliRunner().invoke(main, ["batch", str(_claims(tmp_path, 2)), "--db", "b.db",
                                        "--workers", "0", "--json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        asked = _requests(served.url)
    finally:
        served.stop()
    assert any("list=search" in r["path"] for r in asked)
