"""``/metrics``: after a batch (in-process, and through ``claimfsm batch --metrics-port``
over HTTP) and on ``claimfsm ui``, the Prometheus text parses with prometheus_client's
parser and its counts are the store's; the tally a worker sends back merges.
"""

from __future__ import annotations

import json
import pickle
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.model import Revision, trusted
from claimfsm.state.open import open_store
from tests.support.components import need_module

need_module("prometheus_client", "ui")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from claimfsm.observe.metrics import (  # noqa: E402
    StoreGauges,
    registry_for,
    render,
    serve_metrics,
)
from claimfsm.observe.observer import ObserveSpec  # noqa: E402
from claimfsm.observe.tally import BUCKETS, Tally  # noqa: E402

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(found: dict[Any, float], name: str, **match: str) -> float:
    return sum(v for (n, labels), v in found.items()
               if n == name and all((k, w) in labels for k, w in match.items()))


def store_counts(db: Path) -> dict[str, Any]:
    with open_store(db) as store:
        history = {sid: list(store.history(sid)) for sid in store.sessions()}
    events = [e for revs in history.values() for r in revs for e in r.events]
    return {
        "commits": sum(len(revs) - 1 for revs in history.values()),
        "by_state": Counter(revs[-1].fsm for revs in history.values()),
        "tools": Counter((e["tool"], e["code"] or "ok") for e in events
                         if e["type"] == "ToolInvoked"),
        "step_states": Counter(r.fsm for revs in history.values() for r in revs[:-1]),
    }


def claims_file(tmp_path: Path, n: int) -> Path:
    src = tmp_path / "claims.jsonl"
    src.write_text("".join(json.dumps({"id": i, "claim": DEMO[i % len(DEMO)]}) + "\n"
                           for i in range(n)))
    return src


def check_against_store(text: str, db: Path) -> None:
    found = samples(text)
    want = store_counts(db)
    assert total(found, "claimfsm_commits_total") == want["commits"] > 0
    assert total(found, "claimfsm_steps_total") == want["commits"]  # every step committed
    assert total(found, "claimfsm_conflicts_total") == 0
    for (tool, outcome), n in want["tools"].items():
        assert total(found, "claimfsm_tool_calls_total", tool=tool, outcome=outcome) == n
    assert total(found, "claimfsm_tool_calls_total") == sum(want["tools"].values())
    for state, n in want["step_states"].items():
        assert total(found, "claimfsm_step_seconds_count", state=state) == n
        assert total(found, "claimfsm_steps_total", state=state) == n
        assert total(found, "claimfsm_step_seconds_bucket", state=state, le="+Inf") == n
    assert total(found, "claimfsm_tool_seconds_count") == sum(want["tools"].values())
    for state, n in want["by_state"].items():
        assert total(found, "claimfsm_sessions", state=state) == n
    assert total(found, "claimfsm_waiting_sessions") == 0


def test_metrics_after_an_in_process_batch_match_the_store(tmp_path: Path) -> None:
    from claimfsm.batch import read_claims, run_batch

    db = tmp_path / "x.db"
    tally = Tally()
    claims = read_claims(claims_file(tmp_path, 5))
    try:
        summary = run_batch(claims, db, workers=0, observe=ObserveSpec(tally=True), tally=tally)
    finally:
        claims.close()
    assert summary.ok
    from claimfsm.state.open import locate

    registry = registry_for(tally, StoreGauges.at(locate(db), DEFAULT_MACHINE.finals))
    server = serve_metrics(registry, 0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    check_against_store(text, db)


def test_batch_metrics_port_serves_the_counts_and_json_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claimfsm.cli import batch_observe
    from claimfsm.cli.main import main
    from claimfsm.observe.logs import LOGGER, stop_logging

    scraped: list[str] = []
    close = batch_observe.BatchWatch.close

    def scrape_then_close(self: batch_observe.BatchWatch) -> None:
        # the batch has finished: what a scrape now sees is what it did
        url = f"http://127.0.0.1:{self.server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            scraped.append(reply.read().decode())
        close(self)

    monkeypatch.setattr(batch_observe.BatchWatch, "close", scrape_then_close)
    db = tmp_path / "x.db"
    handlers = list(LOGGER.handlers)
    try:
        res = CliRunner().invoke(main, ["batch", str(claims_file(tmp_path, 4)), "--db", str(db),
                                        "--workers", "0", "--metrics-port", "0",
                                        "--log-format", "json", "--json"],
                                 catch_exceptions=False)
    finally:
        for handler in LOGGER.handlers:
            if handler not in handlers:
                stop_logging(handler)
    assert res.exit_code == 0, res.output
    assert "metrics at http://127.0.0.1:" in res.stderr
    check_against_store(scraped[0], db)
    events = [json.loads(line) for line in res.stderr.splitlines() if line.startswith("{")]
    claims = [e for e in events if e["event"] == "claim"]
    steps = [e for e in events if e["event"] == "step"]
    assert len(claims) == 4 and all(e["status"] == "done" and e["code"] is None for e in claims)
    assert len(steps) == store_counts(db)["commits"]
    assert all({"sid", "rev", "code", "ts", "level"} <= set(e) for e in steps)


def test_ui_serves_metrics_of_the_steps_it_ran(tmp_path: Path) -> None:
    need_module("starlette", "ui")
    from starlette.testclient import TestClient

    from claimfsm.ui.app import create_app
    from claimfsm.ui.observing import observe_app
    from tests.support.ui_helpers import make_service

    db = tmp_path / "ui.db"
    service = make_service(db)
    try:
        app = create_app(service, db_label=db.name)
        observe_app(app, service)
        with TestClient(app) as client:
            sid = client.post("/api/v1/sessions", json={"claim": DEMO[0]}).json()["sid"]
            client.post(f"/api/v1/sessions/{sid}/run", json={})
            reply = client.get("/metrics")
    finally:
        service.close()
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    check_against_store(reply.text, db)


def test_the_waiting_gauge_counts_sessions_that_hold(tmp_path: Path) -> None:
    from claimfsm.engine.runtime import Engine

    eng = Engine.open(tmp_path / "w.db")
    try:
        for claim in DEMO[:3]:
            eng.start(claim)
        head = eng.store.head(eng.store.sessions()[0])
        held = head.state.model_copy(update={"runtime": {
            **head.state.runtime, "hold": {"kind": "input", "state": head.fsm}}})
        eng.store.commit(trusted(Revision, {**head.__dict__, "rev": head.rev + 1,
                                            "parent_rev": head.rev, "state": held}),
                         expected_rev=head.rev)
        gauges = StoreGauges(eng.store.summaries, eng.store.head, DEFAULT_MACHINE.finals)
        found = samples(render(registry_for(Tally(), gauges)).decode())
    finally:
        eng.close()
    assert total(found, "claimfsm_waiting_sessions") == 1
    assert total(found, "claimfsm_sessions", state="PARSE_CLAIM") == 3


def test_a_tally_merges_drains_and_travels_pickled() -> None:
    tally = Tally()
    tally.step("RETRIEVAL", "retrieve", "ok", None, committed=True, seconds=0.003)
    tally.step("RETRIEVAL", "retrieve", "error", "REV_CONFLICT", committed=False, seconds=20.0)
    tally.tool("search", None, 0.0001)
    tally.tool("search", "RATE_LIMITED", 0.2)
    moved = pickle.loads(pickle.dumps(tally.drain()))
    assert tally.commits == 0 and not tally.steps and not tally.step_seconds
    into = Tally()
    into.merge(moved)
    into.merge(moved)
    assert into.commits == 2 and into.conflicts == 2
    assert into.errors == Counter({("step", "REV_CONFLICT"): 2, ("tool", "RATE_LIMITED"): 2})
    assert into.tool_calls == Counter({("search", "ok"): 2, ("search", "RATE_LIMITED"): 2})
    hist = into.step_seconds["RETRIEVAL"]
    assert hist.count == 4 and hist.counts[-1] == 2  # 20 s is past the last bound
    assert hist.counts[BUCKETS.index(0.005)] == 2 and hist.total == pytest.approx(40.006)
