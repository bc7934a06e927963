"""The key's name as the actor of every write through the API (docs/security.md): a step,
a run (each of its steps), a fork and a what-if fork, a resume and the run it starts
record the key's name in the revisions they commit (input: tests/ui/test_ui_auth.py);
the session page's timeline shows it; the exported record replays exactly. Without keys
nothing records an actor."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.state.keys import new_key  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.auth import Gate, Throttle  # noqa: E402
from tests.support.ui_helpers import make_service  # noqa: E402

CLAIM = "NASA landed on the Moon in 1969."
NOW = datetime.now(UTC)


def _with_actor(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["actor"]) for e in events if "actor" in e]


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[TestClient, Any, dict[str, dict[str, str]]]]:
    service = make_service(tmp_path / "keyed.db")
    heads: dict[str, dict[str, str]] = {}
    for name, role in (("k-write", "write"), ("k-ops", "write"), ("k-review", "review")):
        text, row = new_key(name, role, now=NOW)
        service.engine.store.add_key(row)
        heads[name.removeprefix("k-")] = {"Authorization": f"Bearer {text}"}
    gate = Gate(service.engine.store, ttl=0, throttle=Throttle(limit=10**6))
    try:
        with TestClient(create_app(service, gate=gate)) as client:
            yield client, service, heads
    finally:
        service.close()


def test_step_run_and_fork_record_the_write_keys_name(keyed: Any) -> None:
    c, service, heads = keyed
    write = heads["write"]
    sid = c.post("/api/v1/sessions", json={"claim": CLAIM}, headers=write).json()["sid"]
    r = c.post(f"/api/v1/sessions/{sid}/step", json={"expected_rev": 0}, headers=write)
    assert r.status_code == 200, r.text
    one = service.revision(sid, 1)
    assert one.events[-1] == {"type": "Actor", "actor": "k-write"}
    r = c.post(f"/api/v1/sessions/{sid}/run", json={}, headers=write)
    assert r.status_code == 200 and r.json()["fsm"] == "DONE", r.text
    history = service.history(sid)
    assert len(history) > 3
    assert [_with_actor(rev.events) for rev in history] == [["k-write"]] * len(history)
    r = c.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2}, headers=write)
    assert r.status_code == 201, r.text
    fork = r.json()["sid"]
    mark = service.revision(fork, 3)
    assert mark.events[0]["type"] == "Forked" and mark.events[0]["actor"] == "k-write"
    r = c.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2, "judge": "lexical"},
               headers=write)
    assert r.status_code == 201, r.text
    assert _with_actor(service.revision(r.json()["sid"], 3).events) == ["k-write"]
    r = c.post(f"/api/v1/sessions/{fork}/run", json={}, headers=write)
    assert r.status_code == 200, r.text
    # The inspector's timeline names who asked for each revision.
    page = c.get(f"/sessions/{fork}", headers=write).text
    assert page.count('<span class="by muted">by k-write</span>') >= 2
    # The export carries the actors and replays them exactly, hash for hash.
    from claimfsm.replay import parse_record, replay_record

    data = c.get(f"/api/v1/sessions/{sid}/record", headers=write).content
    assert data.count(b'"actor":"k-write"') == len(history)
    report = replay_record(parse_record(data, source="api"), "strict")
    assert report.ok, report.divergence


def test_the_run_after_a_resume_records_who_resumed(keyed: Any) -> None:
    c, service, heads = keyed
    sid = c.post("/api/v1/sessions", json={"claim": CLAIM, "pause_before": ["VERIFY"]},
                 headers=heads["write"]).json()["sid"]
    c.post(f"/api/v1/sessions/{sid}/run", json={}, headers=heads["write"])
    paused = service.head(sid).rev
    r = c.post(f"/api/v1/sessions/{sid}/resume", headers=heads["ops"],
               json={"actor": "mallory"})
    assert r.status_code == 200 and r.json()["fsm"] == "DONE", r.text
    after = service.history(sid)[paused + 1:]
    assert len(after) >= 2  # the resume, then the steps of the run it starts
    assert all(_with_actor(rev.events) == ["k-ops"] for rev in after)
    assert all(_with_actor(rev.events) == ["k-write"]
               for rev in service.history(sid)[:paused + 1])


def test_without_keys_nothing_records_an_actor(tmp_path: Path) -> None:
    service = make_service(tmp_path / "open.db")
    try:
        with TestClient(create_app(service)) as c:
            sid = c.post("/api/v1/sessions", json={"claim": CLAIM}).json()["sid"]
            assert c.post(f"/api/v1/sessions/{sid}/step", json={}).status_code == 200
            assert c.post(f"/api/v1/sessions/{sid}/run", json={}).status_code == 200
            fork = c.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2}).json()["sid"]
            assert c.post(f"/api/v1/sessions/{fork}/run", json={}).status_code == 200
            for s in (sid, fork):
                for rev in service.history(s):
                    assert _with_actor(rev.events) == [], (s, rev.rev, rev.events)
                    assert all(e.get("type") != "Actor" for e in rev.events)
            assert "by muted" not in c.get(f"/sessions/{fork}").text
            assert b'"actor"' not in c.get(f"/api/v1/sessions/{sid}/record").content
    finally:
        service.close()
