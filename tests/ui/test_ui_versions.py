"""Versions in the web inspector and its API: a version badge on the session page, a
version filter on the sessions list, ``version`` on every listed session, the HTML
report, and a step of a session of another version is ``VERSION_MISMATCH``, 409."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.engine.bindings import DEFAULT_BINDINGS  # noqa: E402
from claimfsm.engine.machine import DEFAULT_MACHINE  # noqa: E402
from claimfsm.engine.version import machine_version  # noqa: E402
from tests.support.ui_helpers import app_client  # noqa: E402


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _start(client: TestClient) -> str:
    r = client.post("/api/v1/sessions", json={"claim": "NASA landed on the Moon in 1969."})
    assert r.status_code == 201, r.text
    return str(r.json()["sid"])


def test_the_session_page_and_the_report_show_the_version(client: TestClient) -> None:
    version = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    sid = _start(client)
    page = client.get(f"/sessions/{sid}").text
    assert f'id="version" title="machine version">version {version}</span>' in page
    report = client.get(f"/api/v1/sessions/{sid}/report").text
    assert f'<code id="version">{version}</code>' in report


def test_the_sessions_list_filters_by_version(tmp_path: Path) -> None:
    db = tmp_path / "ui.db"
    with app_client(db) as client:
        _filters(client, db)


def _filters(client: TestClient, db: Path) -> None:
    old = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    first = _start(client)
    items = client.get("/api/v1/sessions").json()["items"]
    assert [(i["sid"], i["version"]) for i in items] == [(first, old)]
    assert client.get("/api/v1/sessions", params={"version": "nope"}).json()["items"] == []
    html = client.get("/", params={"version": old}).text
    assert first in html and f'name="version" size="18" value="{old}"' in html
    assert first not in client.get("/", params={"version": "nope"}).text
    # A session started by an older definition (another process wrote it) refuses, 409.
    from claimfsm.engine.runtime import Engine

    with Engine.open(str(db)) as eng:
        eng.driver.start("An older claim.", sid="older", version="0123456789abcdef")
    r = client.post("/api/v1/sessions/older/step", json={})
    assert r.status_code == 409 and r.json()["error"]["code"] == "VERSION_MISMATCH"
    assert "0123456789abcdef" in r.json()["error"]["msg"]
    listed = client.get("/api/v1/sessions", params={"version": "0123456789abcdef"}).json()
    assert [i["sid"] for i in listed["items"]] == ["older"]
