"""The batch benchmark (``claimfsm bench batch``) runs end to end on small numbers and
reports what it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimfsm.batch.bench import COMMITS_PER_WRITER, commit_rate, demo_claims
from claimfsm.cli.main import main
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
    result = CliRunner().invoke(main, [
        "bench", "batch", "--pg", pg_server.url, "--claims", "24", "--commits", "20",
        "--repeat", "2", "--json", str(out)])
    report = json.loads(out.read_text())
    # A goal missed on a small run is exit 1, not an error.
    assert result.exit_code == (0 if all(report["goals"].values()) else 1), result.output
    assert set(report) == {"machine", "claims", "commits", "goals"}
    cases = [(r["suite"], r["case"]) for r in report["claims"]]
    # The tests' Ray reports 2 CPUs: a batch refuses more workers than that.
    assert cases == [("demo", "serial, SQLite"), ("demo", "Ray 2 workers, SQLite"),
                     ("demo", "Ray 2 workers, PostgreSQL")]
    assert report["machine"]["ray_cpus"] == 2
    assert report["machine"]["left_out"] == ["Ray 4 workers, PostgreSQL"]
    assert all(r["claims"] == 24 and r["claims_per_s"] > 0 for r in report["claims"])
    assert report["claims"][0]["speed_up"] == 1.0
    assert [c["writers"] for c in report["commits"]] == [1, 8]
    assert all(c["commits"] == 20 * c["writers"] for c in report["commits"])
    assert all(len(r["runs"]) == 2 and r["claims_per_s"] == max(r["runs"])
               for r in report["claims"])
    assert set(report["goals"]) == {"ray_2_workers_speed_up_ge_1.7",
                                    "pg_8_writers_ge_2000_commits_per_s"}
    lines = result.stdout.splitlines()
    assert all(line.startswith("demo ") and case in line and " claims/s " in line
               for (_, case), line in zip(cases, lines, strict=False))
    assert sum("commits/s (synchronous_commit=on)" in line for line in lines) == 2
    assert lines[-2] == "Ray 4 workers, PostgreSQL: left out (Ray reports 2 CPUs)"
    assert lines[-1].startswith("goals: ray_2_workers_speed_up_ge_1.7 ")
    assert f"wrote {out}" in result.stderr


def test_without_postgresql_only_the_sqlite_cases_run(
    ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAIMFSM_PG_URL", raising=False)
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(main, ["bench", "batch", "--claims", "1", "--repeat", "1",
                                       "--json", str(out)])
    report = json.loads(out.read_text())
    assert result.exit_code == 1, result.output  # the PostgreSQL goal cannot be met
    assert [r["case"] for r in report["claims"]] == ["serial, SQLite", "Ray 2 workers, SQLite"]
    assert report["commits"] == [] and not report["goals"]["pg_8_writers_ge_2000_commits_per_s"]
    assert "PostgresStore" not in result.stdout


def test_the_options_keep_the_script_s_defaults() -> None:
    from claimfsm.cli.bench import bench_batch

    defaults = {p.name: p.default for p in bench_batch.params}
    assert defaults == {"pg": None, "claims": 1000, "data": None, "data_claims": 300,
                        "repeat": 3, "commits": COMMITS_PER_WRITER, "json_file": None}
    pg = next(p for p in bench_batch.params if p.name == "pg")
    assert pg.envvar == "CLAIMFSM_PG_URL"
    result = CliRunner().invoke(main, ["bench", "batch", "--claims", "0"])
    assert result.exit_code == 2 and "--claims" in result.output
