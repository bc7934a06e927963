"""The people-in-the-loop API end to end over HTTP: a session that waits in REVIEW is
listed and shown WAITING, takes its input as one revision (stale, wrong, empty actor and
not-waiting inputs refused with their codes), and pauses, resumes and edits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from tests.support.ui_helpers import app_client  # noqa: E402

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _error(r: Any, status: int, code: str, field: str | None = None) -> None:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["msg"]
    if field is not None:
        assert err["field"] == field, err


def _waiting(client: TestClient, **profile: Any) -> tuple[str, dict[str, Any]]:
    r = client.post("/api/v1/sessions", json={"claim": CLAIM, **profile})
    assert r.status_code == 201, r.text
    sid = r.json()["sid"]
    done = client.post(f"/api/v1/sessions/{sid}/run", json={}).json()
    return sid, done


def test_review_waits_and_takes_an_override_as_one_revision(client: TestClient) -> None:
    sid, done = _waiting(client, review="always")
    assert done["fsm"] == "REVIEW" and done["status"] == "WAITING"
    assert done["waiting"]["kind"] == "input" and done["waiting"]["input"] == "ReviewInput"
    assert done["verdict"] == "SUPPORTS" and done["provenance"] == "engine"
    listed = client.get("/api/v1/sessions", params={"status": "WAITING"}).json()["items"]
    assert [(i["sid"], i["status"]) for i in listed] == [(sid, "WAITING")]
    step = client.post(f"/api/v1/sessions/{sid}/step", json={}).json()
    assert step["committed"] is False and step["envelope"]["e"]["code"] == "WAITING"
    rev = done["rev"]
    bad = {"decision": "override", "verdict": "REFUTES"}
    _error(client.post(f"/api/v1/sessions/{sid}/input", json={"input": bad}),
           422, "BAD_INPUT", "input.reason")
    _error(client.post(f"/api/v1/sessions/{sid}/input",
                       json={"input": {"decision": "approve"}, "actor": ""}), 422, "BAD_INPUT")
    _error(client.post(f"/api/v1/sessions/{sid}/input",
                       json={"input": {"decision": "approve"}, "expected_rev": rev - 1}),
           409, "REV_CONFLICT")
    good = {"decision": "override", "verdict": "REFUTES", "reason": "the date is wrong"}
    r = client.post(f"/api/v1/sessions/{sid}/input",
                    json={"input": good, "expected_rev": rev, "actor": "ann"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["input_rev"] == rev + 1 and out["rev"] == rev + 1 and out["fsm"] == "DONE"
    assert out["verdict"] == "REFUTES" and out["provenance"] == "reviewer:ann"
    assert out["status"] == "FINISHED" and out["waiting"] is None
    head = client.get(f"/api/v1/sessions/{sid}/head").json()
    (event,) = head["events"]
    assert event["type"] == "InputReceived" and event["actor"] == "ann"
    assert event["payload"] == good
    _error(client.post(f"/api/v1/sessions/{sid}/input", json={"input": good}),
           409, "NOT_WAITING")
    assert client.get("/api/v1/sessions", params={"status": "WAITING"}).json()["items"] == []


def test_pause_edit_and_resume(client: TestClient) -> None:
    sid, done = _waiting(client, pause_before=["VERIFY"])
    assert done["fsm"] == "VERIFY" and done["status"] == "WAITING"
    assert done["waiting"] == {"kind": "pause", "state": "VERIFY", "when": "before",
                               "since": done["waiting"]["since"]}
    _error(client.post(f"/api/v1/sessions/{sid}/input", json={"input": {}}), 409, "NOT_WAITING")
    _error(client.patch(f"/api/v1/sessions/{sid}", json={"set": {"verdict": None}}),
           409, "NOT_EDITABLE")
    item = {"id": "x#0", "doc_id": "x", "text": "NASA landed on the Moon in 1969.",
            "source": "kb", "score": 1.0}
    r = client.patch(f"/api/v1/sessions/{sid}",
                     json={"set": {"evidence.s1": [item]}, "actor": "bob"})
    assert r.status_code == 200, r.text
    edited = r.json()
    assert edited["rev"] == done["rev"] + 1 and edited["status"] == "WAITING"
    (event,) = edited["events"]
    assert event["type"] == "Edited" and event["actor"] == "bob"
    assert event["changes"][0]["field"] == "evidence.s1"
    assert event["changes"][0]["new"] == [{**item, "rank": 0.0}]
    r = client.post(f"/api/v1/sessions/{sid}/resume", json={"actor": "bob"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["resume_rev"] == edited["rev"] + 1 and out["fsm"] == "DONE"
    assert out["subclaims"][0]["evidence"][0]["id"] == "x#0"  # VERIFY judged the edit
    _error(client.post(f"/api/v1/sessions/{sid}/resume", json={}), 409, "NOT_WAITING")


def test_unknown_pause_state_is_refused_naming_the_field(client: TestClient) -> None:
    r = client.post("/api/v1/sessions", json={"claim": CLAIM, "pause_before": ["NOPE"]})
    _error(r, 422, "BAD_INPUT", "pause_before")
