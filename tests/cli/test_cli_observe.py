"""``--otel`` on the commands: ``verify`` with OTEL_EXPORTER_OTLP_ENDPOINT sends its
steps' traces to a receiver process; ``--otel`` without the extra is OTEL_UNAVAILABLE;
``ui --log-format json`` logs the steps it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.state.open import open_store
from tests.support.components import need_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    need_module("opentelemetry.proto", "otel")
    out = tmp_path / "spans.jsonl"
    out.touch()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.otlp_receiver", str(out)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}", out
    finally:
        proc.terminate()
        proc.wait(10)


def test_verify_with_the_endpoint_set_sends_a_trace_per_step(
    receiver: tuple[str, Path], tmp_path: Path
) -> None:
    endpoint, out = receiver
    db = tmp_path / "x.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
           "OTEL_SERVICE_NAME": "verify-test"}
    done = subprocess.run([sys.executable, "-c", "from claimfsm.cli import main; main()",
                           "verify", "Paris is the capital of France.", "--db", str(db),
                           "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    sid = json.loads(done.stdout)["sid"]
    with open_store(db) as store:
        revisions = len(store.history(sid))
    # the command flushed before it exited: everything is there already
    spans = [json.loads(line) for line in out.read_text().splitlines()]
    steps = [s for s in spans if s["name"] == "claimfsm.step"]
    assert len(steps) == revisions - 1
    assert {s["service"] for s in spans} == {"verify-test"}
    assert all(s["attributes"]["claimfsm.sid"] == sid for s in steps)


def test_otel_without_the_extra_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claimfsm.observe import observer

    monkeypatch.setattr(observer, "_TRACING", {})
    monkeypatch.setitem(sys.modules, "claimfsm.observe.traces", None)
    res = CliRunner().invoke(main, ["verify", "Paris is the capital of France.", "--db",
                                    str(tmp_path / "x.db"), "--json", "--otel"])
    assert res.exit_code == 2
    error = json.loads(res.output)["error"]
    assert error["code"] == "OTEL_UNAVAILABLE" and "--otel" in error["msg"]


def test_without_otel_or_the_variable_nothing_is_traced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claimfsm.cli.observing import tracing_for

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert tracing_for(False, True) is None


def test_ui_logs_steps_as_json_lines(tmp_path: Path) -> None:
    need_module("uvicorn", "ui")
    from tests.support.ui_helpers import free_port

    port = free_port()
    db = tmp_path / "ui.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", "from claimfsm.cli import main; main()",
                             "ui", "--db", str(db), "--port", str(port), "--log-format",
                             "json"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        import httpx

        assert proc.stderr is not None
        line = proc.stderr.readline()  # "claimfsm ui: ... at http://..." once it listens
        assert f":{port}/" in line
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                sid = httpx.post(f"{base}/api/v1/sessions",
                                 json={"claim": "Paris is the capital of France."},
                                 timeout=30).json()["sid"]
                break
            except httpx.ConnectError:
                import time

                time.sleep(0.1)
        step = httpx.post(f"{base}/api/v1/sessions/{sid}/step", json={}, timeout=30)
        assert step.status_code == 200
        metrics = httpx.get(f"{base}/metrics", timeout=30).text
        assert "claimfsm_commits_total 1.0" in metrics
        # The request log comes in the same format: start, the step's event, the step.
        events = [json.loads(proc.stderr.readline()) for _ in range(3)]
    finally:
        proc.terminate()
        proc.wait(20)
    started, event, stepped = events
    assert event["event"] == "step" and event["sid"] == sid
    assert event["rev"] == 1 and event["code"] is None
    assert [(e["event"], e["method"], e["path"], e["status"], e["actor"])
            for e in (started, stepped)] == [
        ("request", "POST", "/api/v1/sessions", 201, "-"),
        ("request", "POST", f"/api/v1/sessions/{sid}/step", 200, "-")]
    assert started["ms"] > 0
