"""``claimfsm bench observe`` runs every case and reports a figure for each (the figures
themselves are measurements for docs/operations.md, never asserted)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from click.testing import CliRunner

from claimfsm.bench.observe import CASES, format_table, run_bench
from claimfsm.cli.main import main
from claimfsm.observe.logs import LOGGER
from tests.support.components import need_module


def test_every_case_is_measured_and_the_driver_is_left_unobserved() -> None:
    need_module("opentelemetry.sdk", "otel")
    handlers = list(LOGGER.handlers)
    report = run_bench(rounds=1, sessions=1)
    assert set(report["hook"]) == set(report["steps"]) == set(CASES)
    assert report["missing"] == {}
    assert all(row["us_per_step"] > 0 for row in report["hook"].values())
    assert report["hook"]["off"]["overhead_us"] == 0
    assert LOGGER.handlers == handlers  # the JSON log of the "all" case was taken off
    assert not LOGGER.isEnabledFor(logging.INFO)
    table = format_table(report)
    assert all(case in table for case in CASES)


def test_the_command_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    res = CliRunner().invoke(main, ["bench", "observe", "--rounds", "1", "--sessions", "1",
                                    "--json", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert set(json.loads(out.read_text())["hook"]) >= {"off", "metrics"}
