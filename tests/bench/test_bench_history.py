"""The history-page benchmark runs and reports both ways of reading a page for every
backend present (its figures are in docs/storage.md, never asserted here)."""

from __future__ import annotations

import pytest

from claimfsm.bench.history import PAGE, run


def test_the_history_benchmark_reports_each_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAIMFSM_PG_URL", raising=False)
    figures = run((30, 150))
    assert figures["page"] == PAGE and {"sqlite", "memory"} <= set(figures)
    for backend in ("sqlite", "memory"):
        assert [row["revisions"] for row in figures[backend]] == [30, 150]
        for row in figures[backend]:
            for where in ("first", "middle", "last"):
                assert set(row[where]) == {"page_ms", "whole_ms"}
                assert all(isinstance(v, float) for v in row[where].values())
