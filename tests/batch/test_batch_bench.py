"""The batch benchmark runs end to end on small numbers and reports what it measured."""

from __future__ import annotations

import json
from pathlib import Path

from claimfsm.batch.bench import commit_rate, demo_claims, main
from claimfsm.state.fsck import fsck
from tests.support.pg import PgServer


def test_commit_rate_counts_every_commit(pg_url: str) -> None:
    from claimfsm.state.postgres import PostgresStore

    row = commit_rate(pg_url, 2, commits=30)
    assert row["writers"] == 2 and row["commits"] == 60 and row["commits_per_s"] > 0
    assert row["synchronous_commit"] == "on"
    with PostgresStore(pg_url) as store:
        report = fsck(store)
    assert report.ok and report.sessions == 2 and report.revisions == 62


def test_the_benchmark_writes_its_table(
    pg_server: PgServer, ray_address: str, tmp_path: Path
) -> None:
    assert [c.id for c in demo_claims(25)] == list(range(25))
    out = tmp_path / "bench.json"
    main(["--pg", pg_server.url, "--claims", "24", "--commits", "20", "--repeat", "2",
          "--json", str(out)])
    report = json.loads(out.read_text())
    cases = [(r["suite"], r["case"]) for r in report["claims"]]
    assert cases == [("demo", "serial, SQLite"), ("demo", "Ray 2 workers, SQLite"),
                     ("demo", "Ray 2 workers, PostgreSQL"), ("demo", "Ray 4 workers, PostgreSQL")]
    assert all(r["claims"] == 24 and r["claims_per_s"] > 0 for r in report["claims"])
    assert report["claims"][0]["speed_up"] == 1.0
    assert [c["writers"] for c in report["commits"]] == [1, 8]
    assert all(len(r["runs"]) == 2 and r["claims_per_s"] == max(r["runs"])
               for r in report["claims"])
    assert set(report["goals"]) == {"ray_2_workers_speed_up_ge_1.7",
                                    "pg_8_writers_ge_2000_commits_per_s"}
