"""``claimfsm bench review`` on a tiny store: the figures it prints and writes, the goals
it checks (exit 1 when a page misses 200 ms), and the store it keeps between runs."""

from __future__ import annotations

from pathlib import Path

import orjson
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.runtime import Engine
from claimfsm.state.queue import WaitingQuery
from tests.support.components import need_module

need_module("uvicorn", "ui")

PAGES = ["queue_first_page_ms", "queue_half_way_ms", "queue_last_page_ms",
         "queue_state_REVIEW_ms"]


def test_bench_review_prints_and_writes_its_figures(tmp_path: Path) -> None:
    db, out = tmp_path / "cache" / "review-bench.db", tmp_path / "bench-review.json"
    args = ["bench", "review", "--sessions", "6", "--every", "2", "--db", str(db)]
    result = CliRunner().invoke(main, [*args, "--json", str(out)])
    figures = orjson.loads(out.read_bytes())
    goals = figures.pop("goals")
    # Exit 1 exactly when a page missed its goal (a loaded machine may miss it).
    assert result.exit_code == (0 if all(goals.values()) else 1), result.output
    assert (figures["sessions"], figures["waiting"]) == (6, 3)
    assert list(figures)[:4] == ["sessions", "waiting", "build_s", "queue_first_page_cold_ms"]
    assert all(k in figures for k in PAGES)
    assert [k for k in figures if k.startswith("queue_age_")]
    assert all(v > 0 for k, v in figures.items() if k.endswith("_ms"))
    assert set(goals) == {k for k in figures if k.startswith("queue_")}
    assert all(goals[k] == (figures[k] < 200) for k in goals)
    printed = [line.split()[0] for line in result.stdout.splitlines()[:-1]]
    assert printed == list(figures)
    with Engine.open(str(db)) as eng:  # the sessions the queue was measured on wait
        page = eng.store.waiting(WaitingQuery())
        assert [i.fsm for i in page.items] == ["REVIEW"] * 3
        assert [i.updated for i in page.items] == sorted(i.updated for i in page.items)
    again = CliRunner().invoke(main, args)  # kept: measured again, not rebuilt
    assert "sessions                                  6" in again.stdout
