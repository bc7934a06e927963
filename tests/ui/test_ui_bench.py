"""``claimfsm bench ui`` on the smallest store it accepts: the figures it prints and
writes, under the keys ``make bench-ui`` has always written."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from click.testing import CliRunner

from claimfsm.cli.main import main
from tests.support.components import need_module

need_module("uvicorn", "ui")

FIGURES = ["sessions", "build_s", "first_page_cold_ms", "first_search_cold_ms",
           "first_page_ms", "deep_page_ms", "last_page_ms", "api_page_ms", "filter_done_ms",
           "search_ms", "session_100_server_ms", "session_revisions"]
# Measured only where selenium, chromium and chromedriver are all present.
BROWSER = ["session_100_chromium_load_ms", "session_100_chromium_dom_ms"]


def test_bench_ui_prints_and_writes_its_figures(tmp_path: Path) -> None:
    db, out = tmp_path / "cache" / "ui-bench.db", tmp_path / "bench-ui.json"
    result = CliRunner().invoke(main, ["bench", "ui", "--sessions", "4", "--db", str(db),
                                       "--json", str(out)])
    assert result.exit_code == 0, result.output
    figures = orjson.loads(out.read_bytes())
    browser = shutil.which("chromium") is not None and shutil.which("chromedriver") is not None
    assert list(figures) == FIGURES + (BROWSER if browser else [])
    assert figures["sessions"] == 5 and figures["session_revisions"] >= 100  # + the long one
    assert all(figures[k] > 0 for k in FIGURES if k.endswith("_ms"))
    assert [line.split()[0] for line in result.stdout.splitlines()] == list(figures)
    assert out.read_bytes().endswith(b"}\n") and f"wrote {out}" in result.stderr
    # The store is kept: a second run measures it again without rebuilding it.
    again = CliRunner().invoke(main, ["bench", "ui", "--sessions", "4", "--db", str(db)])
    assert again.exit_code == 0 and "sessions                                  5" in again.stdout


def test_bench_ui_refuses_a_store_too_small_to_page(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["bench", "ui", "--sessions", "3",
                                       "--db", str(tmp_path / "ui.db")])
    assert result.exit_code == 2 and "--sessions" in result.output
    assert not (tmp_path / "ui.db").exists()
