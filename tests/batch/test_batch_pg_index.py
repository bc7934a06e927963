"""``claimfsm batch`` with the evidence index in PostgreSQL: every Ray worker reads the
one shared index (no file per worker) and gives the verdicts an in-process run gives on
that index; the workers that open a new, empty index at once seed it without a clash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from claimfsm.batch import read_claims, run_batch
from claimfsm.engine.runtime import FIXTURES
from claimfsm.skills.tools.index_pg import PgEvidenceIndex
from claimfsm.state.fsck import fsck
from claimfsm.state.open import open_store
from tests.support.pg import PgServer

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def test_ray_workers_share_one_postgres_index(ray_address: str, pg_server: PgServer,
                                              tmp_path: Path) -> None:
    index_url = pg_server.new_schema()
    path = tmp_path / "claims.jsonl"
    n = 24
    path.write_text("".join(json.dumps({"id": f"c{i}", "claim": DEMO[i % len(DEMO)]}) + "\n"
                            for i in range(n)))
    items = read_claims(path)
    param = f"&index={quote(index_url, safe='')}"
    ray_db, local_db = pg_server.new_schema() + param, pg_server.new_schema() + param
    seen: list[dict[str, Any]] = []
    summary = run_batch(items, ray_db, workers=2, on_result=seen.append)
    assert summary.runner == "ray" and summary.ok and summary.done == n
    with PgEvidenceIndex.open(index_url) as idx:
        assert idx.count_documents() == 41  # the demo corpus, seeded once, shared
    local: list[dict[str, Any]] = []
    assert run_batch(items, local_db, workers=0, on_result=local.append).ok
    assert {g["id"]: g["verdict"] for g in seen} == {g["id"]: g["verdict"] for g in local}
    assert len({g["verdict"] for g in seen}) > 1  # not one answer for everything
    with open_store(ray_db) as store:
        assert fsck(store).ok
