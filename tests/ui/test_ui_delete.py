"""``DELETE /api/v1/sessions/{sid}``: 200 with the tombstone (the shape of ``claimfsm
delete --json``), then the session is gone from every endpoint while its fork still
reads, exports and verifies; 404 ``UNKNOWN_SESSION`` for a session that is not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from tests.support.ui_helpers import app_client  # noqa: E402


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _done(client: TestClient, claim: str) -> dict[str, Any]:
    sid = client.post("/api/v1/sessions", json={"claim": claim}).json()["sid"]
    done = client.post(f"/api/v1/sessions/{sid}/run", json={})
    assert done.status_code == 200, done.text
    return dict(done.json())


def test_delete_answers_the_tombstone_and_the_session_is_gone(client: TestClient) -> None:
    parent = _done(client, "NASA landed on the Moon in 1969.")["sid"]
    fork = client.post(f"/api/v1/sessions/{parent}/fork", json={"at": 3}).json()["sid"]
    record = client.get(f"/api/v1/sessions/{fork}/record").content
    head = client.get(f"/api/v1/sessions/{parent}/head").json()

    r = client.delete(f"/api/v1/sessions/{parent}")
    assert r.status_code == 200, r.text
    stone = r.json()
    assert set(stone) == {"sid", "deleted_at", "actor", "head", "fsm", "last_hash"}
    assert (stone["sid"], stone["actor"], stone["head"], stone["fsm"]) == (
        parent, "api", head["rev"], "DONE")
    assert len(stone["last_hash"]) == 64

    for path in ("", "/head", "/history", "/record", "/check"):
        gone = client.get(f"/api/v1/sessions/{parent}{path}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "UNKNOWN_SESSION"
    listed = [s["sid"] for s in client.get("/api/v1/sessions").json()["items"]]
    assert listed == [fork]
    assert client.get(f"/api/v1/sessions/{fork}/record").content == record
    assert client.get(f"/api/v1/sessions/{fork}/check").json()["ok"] is True

    again = client.delete(f"/api/v1/sessions/{parent}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "UNKNOWN_SESSION"
    never = client.delete("/api/v1/sessions/no-such-session")
    assert never.status_code == 404 and never.json()["error"]["code"] == "UNKNOWN_SESSION"
    assert client.get("/api/v1/openapi.json").json()["paths"][
        "/api/v1/sessions/{sid}"]["delete"]["responses"]["200"]


def test_a_deletion_by_another_process_is_seen_at_once(client: TestClient,
                                                       tmp_path: Path) -> None:
    from claimfsm.state.sqlite import SQLiteStore

    sid = _done(client, "NASA landed on the Moon in 1969.")["sid"]
    assert client.get(f"/api/v1/sessions/{sid}/revisions/2").status_code == 200  # cached now
    with SQLiteStore(tmp_path / "ui.db") as other:  # e.g. `claimfsm delete` meanwhile
        other.delete(sid, actor="alice", at="2026-11-25T12:00:00+00:00")
    for path in ("/revisions/2", "/diff?a=1&b=2", "/head", "/history"):
        gone = client.get(f"/api/v1/sessions/{sid}{path}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "UNKNOWN_SESSION"
