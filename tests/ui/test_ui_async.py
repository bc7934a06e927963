"""``claimfsm ui`` drives sessions through the async engine: its session operations do
not wait for the service's lock (the sync path's), and many sessions run at once on
SQLite and PostgreSQL with the same verdicts as the sync driver's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from claimfsm.engine.runtime import Engine
from claimfsm.engine.views import verdict_json
from claimfsm.ui.app import create_app
from claimfsm.ui.service import Service
from tests.support.pg import PgServer

CLAIMS = ("Global sea levels are rising.", "The Arctic sea ice is shrinking.",
          "Coral reefs are bleaching because the oceans warm.")


async def _drive(service: Service, claims: list[str]) -> list[dict[str, Any]]:
    transport = httpx.ASGITransport(app=create_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://ui") as client:
        async def one(claim: str) -> dict[str, Any]:
            r = await client.post("/api/v1/sessions", json={"claim": claim})
            assert r.status_code == 201, r.text
            sid = r.json()["sid"]
            r = await client.post(f"/api/v1/sessions/{sid}/step", json={})
            assert r.status_code == 200 and r.json()["rev"] == 1, r.text
            r = await client.post(f"/api/v1/sessions/{sid}/run", json={})
            assert r.status_code == 200, r.text
            return dict(r.json())

        return list(await asyncio.gather(*(one(c) for c in claims)))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sessions_run_concurrently_without_the_service_lock(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if backend == "sqlite":
        db = str(tmp_path / "ui.db")
    else:
        server: PgServer = request.getfixturevalue("pg_server")
        db = server.new_schema()
    service = Service.open(db)
    claims = [CLAIMS[i % len(CLAIMS)] for i in range(6)]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # the sync path's lock, held for the whole test
        with service.lock:
            held.set()
            release.wait(300)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        held.wait(30)
        # On the sync path every call would wait for the lock: the time limit fails it.
        answers = asyncio.run(asyncio.wait_for(_drive(service, claims), 90))
    finally:
        release.set()
        holder.join()
        service.close()
    with Engine.open(None) as sync:
        want = {c: verdict_json(sync.driver.run(sync.start(c).sid)) for c in set(claims)}
    for claim, answer in zip(claims, answers, strict=True):
        assert answer["fsm"] == "DONE"
        assert {**answer, "sid": ""} == {**want[claim], "sid": ""}
