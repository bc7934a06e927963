"""``make bench-auth`` runs (a small round): every call of every mode answered 200 (the
script refuses anything else), and the figures are there for each mode."""

from __future__ import annotations

from tests.support.components import need_module

need_module("uvicorn", "ui")


def test_bench_auth_measures_every_mode() -> None:
    from claimfsm.ui.bench_auth import run

    figures = run(rounds=1, calls=20, http_calls=5)
    for part in ("guard_us", "asgi_us", "http_ms"):
        assert set(figures[part]) == {"off", "bearer", "cookie"}
        assert all(v > 0 for v in figures[part].values())
    assert figures["check_us"] > 0 and figures["rounds"] == 1
