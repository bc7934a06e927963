"""``claimfsm bench``: the report's arithmetic and shape, and one real (tiny) run through
the CLI. Figures are checked for shape and sense only, never against time goals.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.bench import cases as bench_cases
from claimfsm.bench.run import GOALS, KEYS, BenchConfig, BenchReport, format_table, run_bench
from claimfsm.cli.main import main

REQUIRED = (
    "mem_us_per_step", "sqlite_normal_us_per_step", "sqlite_full_us_per_step",
    "group_commit_us_per_step", "rev_read_us", "history_100_us", "replay_steps_per_s",
    "bytes_per_step_noop", "bytes_ratio_realistic", "peak_mb_per_1000_sessions",
    "rev10k_step_ratio", "rev10k_head_ratio", "cli_step_ms", "version_check_us",
)

TINY = BenchConfig(reps=2, mem_sessions=5, normal_sessions=5, full_sessions=3, group_threads=3,
                   group_sessions=2, reads=3, replay_sessions=4, peak_sessions=20, claims=2,
                   deep_revisions=60, cli_sessions=1, cli_steps=2)


def test_the_keys_are_exactly_the_issue_s() -> None:
    assert tuple(KEYS) == REQUIRED
    assert set(GOALS) <= set(KEYS)


def test_the_report_keeps_median_min_and_max_of_the_samples() -> None:
    report = BenchReport()
    for value in (30.0, 70.0, 40.0):
        report.add("mem_us_per_step", value)
    report.add("replay_steps_per_s", 10_000.0)
    report.meta = {"cpus": 2}
    out = report.to_json()
    assert (out["mem_us_per_step"], out["mem_us_per_step_min"], out["mem_us_per_step_max"]) == (
        40.0, 30.0, 70.0)
    assert out["meta"] == {"cpus": 2}
    assert "rev_read_us" not in out  # nothing measured, nothing reported
    assert report.met("mem_us_per_step") is True  # 40 <= 50
    assert report.met("replay_steps_per_s") is False  # 10,000 < 20,000
    assert report.met("bytes_per_step_noop") is None  # no goal
    table = format_table(report)
    mem = next(line for line in table.splitlines() if line.startswith("mem_us_per_step"))
    replay = next(line for line in table.splitlines() if line.startswith("replay_steps"))
    assert mem.split()[1:4] == ["40.0", "30.0", "70.0"] and mem.endswith("ok")
    assert replay.endswith("MISSED") and "10,000" in replay


def test_a_tiny_run_measures_every_key(tmp_path: Path) -> None:
    said: list[str] = []
    report = run_bench(TINY, progress=said.append)
    out = report.to_json()
    for key in REQUIRED:
        assert out[f"{key}_min"] <= out[key] <= out[f"{key}_max"], key
        assert out[key] > 0, key
    assert len(report.samples["mem_us_per_step"]) == 2
    assert len(report.samples["bytes_ratio_realistic"]) == 1  # deterministic: measured once
    assert 0 < out["bytes_ratio_realistic"] < 1
    real = out["meta"]["realistic"]
    assert real["stored_bytes"] < real["snapshot_bytes"]
    assert real["bytes_ratio"] == pytest.approx(real["stored_bytes"] / real["snapshot_bytes"],
                                                rel=1e-3)
    assert all(n >= 1 for n in out["meta"]["group_commits_per_fsync"])
    assert any("in-memory steps" in m for m in said) and any("replay" in m for m in said)
    deep = out["meta"]["deep_session"][0]
    assert deep["deep_rev"] >= 60 + 10  # the deep session really is that deep
    assert deep["step_ratio"] == pytest.approx(deep["step_us_deep"] / deep["step_us_rev10"],
                                               rel=1e-2)
    assert len(out["meta"]["cli_show_ms"]) == 2 and min(out["meta"]["cli_show_ms"]) > 0
    assert len(out["meta"]["cli_floor_ms"]) == 2 and min(out["meta"]["cli_floor_ms"]) > 0


def test_cli_latency_runs_real_commands_that_step_the_session(tmp_path: Path) -> None:
    from claimfsm.bench import scale
    from claimfsm.state.sqlite import SQLiteStore

    figures = scale.cli_ms(tmp_path, sessions=1, max_steps=3)
    assert figures["steps"] == 3 and figures["step_ms"] > 0 and figures["show_ms"] > 0
    assert figures["floor_ms"] > 0
    with SQLiteStore(tmp_path / "cli.db") as store:  # three processes, three revisions
        assert [store.head(sid).rev for sid in store.sessions()] == [3]


def test_the_cli_floor_runs_and_imports_nothing_of_the_project() -> None:
    import subprocess
    import sys

    from claimfsm.bench import scale

    probe = scale.CLI_FLOOR + (
        "import sys\n"
        "assert 'pydantic' in sys.modules and 'transitions' in sys.modules\n"
        "mine = sorted(m for m in sys.modules if m.split('.')[0] in ('fsm', 'skills', 'state'))\n"
        "print(mine)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_bytes_per_noop_step_are_bounded_by_the_step_not_the_state(tmp_path: Path) -> None:
    bench_cases.steps_us(tmp_path, "normal", 10)
    small = bench_cases.bytes_noop(tmp_path / "normal.db")
    other = tmp_path / "more"
    other.mkdir()
    bench_cases.steps_us(other, "normal", 40)
    assert bench_cases.bytes_noop(other / "normal.db") == small  # per step, not per session
    assert 100 < small < 400


def test_the_cli_prints_the_table_and_writes_the_json(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import claimfsm.bench.run as bench

    monkeypatch.setattr(bench.BenchConfig, "quick", classmethod(lambda cls: TINY))
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(main, ["bench", "--quick", "--reps", "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    figures = orjson.loads(out.read_bytes())
    assert set(REQUIRED) <= set(figures)
    assert figures["meta"]["reps"] == 1 and figures["meta"]["cpus"] >= 1
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["key", "median", "min", "max"]
    assert [line.split()[0] for line in lines[2:2 + len(REQUIRED)]] == list(REQUIRED)
    assert "bench: [1/1] in-memory steps" in result.stderr
    assert any(line.startswith("cli floor (") and line.endswith(" ms") for line in lines)


def test_the_version_check_figure_times_the_fast_path() -> None:
    from claimfsm.bench.versions import version_check_us

    figure = version_check_us(sessions=50, rounds=3)
    assert 0 < figure < 1000  # a time, whatever the machine; the goal is the bench's


def test_the_compat_bench_batches_then_checks_every_stored_session(tmp_path: Path) -> None:
    from claimfsm.cli.bench_compat import compat_vs_batch

    out = compat_vs_batch(6, tmp_path)
    assert out["sessions"] == 6 == out["batch_done"]
    assert out["compat_counts"] == {"same": 6}
    assert out["batch_claims_per_s"] > 0 and out["compat_sessions_per_s"] > 0
