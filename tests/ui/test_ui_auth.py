"""API keys and roles over HTTP (docs/security.md), in the ASGI app: every route of the
app, walked, under no key, a wrong, a revoked and an expired key, and each role's key
(401, 403 or through as the role table says; a route without a role fails the walk); a
store without keys stays open; the login cookie, its CSRF token on writes, logout; the
key cache's lifetime; the per-address throttle (429 with Retry-After); the key's name as
the actor; ``/api/v1/keys``; and no key in the JSON logs."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.state.keys import ROLES, new_key, role_rank, stamp  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.auth import Gate, Throttle  # noqa: E402
from claimfsm.ui.roles import PUBLIC, ROUTE_ROLES, missing_roles  # noqa: E402
from tests.support.ui_helpers import make_service  # noqa: E402

NOW = datetime.now(UTC)
CLAIM = "NASA landed on the Moon in 1969."
BAD = ("wrong", "revoked", "expired")


@dataclass
class World:
    client: TestClient
    keys: dict[str, str]
    sid: str
    victim: str
    gate: Gate
    service: Any


def _bearer(text: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {text}"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    service = make_service(tmp_path / "ui.db")
    store = service.engine.store
    keys: dict[str, str] = {}
    for role in ROLES:
        keys[role], row = new_key(f"k-{role}", role, now=NOW)
        store.add_key(row)
    keys["revoked"], row = new_key("gone", "admin", now=NOW)
    store.add_key(row)
    store.revoke_key("gone", at=stamp(NOW))
    keys["expired"], row = new_key("old", "admin", now=NOW - timedelta(days=2),
                                   expires=timedelta(days=1))
    store.add_key(row)
    keys["wrong"] = keys["admin"][:-6] + "AAAAAA"  # the right key id, a wrong secret
    sid = service.start(CLAIM).sid
    service.run(sid)
    victim = service.start("Glaciers are retreating.").sid
    gate = Gate(store, ttl=0, throttle=Throttle(limit=10**6))
    app = create_app(service, gate=gate)
    from claimfsm.ui.observing import observe_app

    observe_app(app, service)
    try:
        with TestClient(app) as client:
            yield World(client, keys, sid, victim, gate, service)
    finally:
        service.close()


def _routes(client: TestClient) -> list[tuple[str, str]]:
    app: Any = client.app
    out = []
    for route in app.router.routes:
        assert isinstance(route, Route)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            out.append((method, route.path))
    return out


def _concrete(world: World, method: str, path: str) -> str:
    sid = world.victim if (method, path) == ("DELETE", "/api/v1/sessions/{sid}") else world.sid
    return (path.replace("{sid}", sid).replace("{rev}", "0").replace("{doc_id}", "doc-x")
            .replace("{name}", "nobody"))


def _send(client: TestClient, method: str, url: str, headers: dict[str, str]) -> Any:
    body: dict[str, Any] = {}
    if method in ("POST", "PATCH") and url.startswith("/api/"):
        body = {"json": {}}
    return client.request(method, url, headers=headers, follow_redirects=False, **body)


def test_every_route_has_a_role_and_the_table_no_stale_entry(world: World) -> None:
    app: Any = world.client.app
    assert missing_roles(app.router.routes) == []
    served = set(_routes(world.client))
    assert served == set(ROUTE_ROLES), (served ^ set(ROUTE_ROLES))


def test_a_route_without_a_role_is_refused_to_every_key(world: World) -> None:
    from starlette.responses import PlainTextResponse

    async def secret(request: Any) -> Any:
        return PlainTextResponse("leaked")

    app: Any = world.client.app
    app.router.routes.append(Route("/api/v1/new", secret, methods=["GET"]))
    assert missing_roles(app.router.routes) == ["GET /api/v1/new"]
    r = world.client.get("/api/v1/new", headers=_bearer(world.keys["admin"]))
    assert r.status_code == 403 and "a role no key has" in r.json()["error"]["msg"]


def test_every_route_under_every_key(world: World) -> None:
    walked = 0
    for method, path in _routes(world.client):
        need = ROUTE_ROLES[(method, path)]
        if need == PUBLIC:
            continue
        url = _concrete(world, method, path)
        api = url.startswith("/api/") or url == "/metrics"
        r = _send(world.client, method, url, {})
        if method == "GET" and not api:
            assert r.status_code == 303, (method, url, r.status_code)
            assert r.headers["location"].startswith("/login?next=")
        else:
            assert r.status_code == 401, (method, url, r.status_code, r.text)
            assert "AUTH_REQUIRED" in r.text and r.headers["www-authenticate"].startswith(
                "Bearer")
        for bad in BAD:
            r = _send(world.client, method, url, _bearer(world.keys[bad]))
            assert r.status_code == 401 and "AUTH_REQUIRED" in r.text, (bad, method, url)
            assert world.keys[bad] not in r.text
        for role in ROLES:
            r = _send(world.client, method, url, _bearer(world.keys[role]))
            if role_rank(role) < role_rank(need):
                assert r.status_code == 403, (role, method, url, r.status_code)
                assert "FORBIDDEN" in r.text and f"the {need} role" in r.text
            else:
                assert r.status_code not in (401, 403, 429), (role, method, url, r.text)
            walked += 1
    assert walked == 4 * (len(ROUTE_ROLES) - 2)  # every route but GET and POST /login
    assert world.service.engine.store.tombstones()[0].actor == "k-admin"


def test_a_store_without_keys_is_open(tmp_path: Path) -> None:
    service = make_service(tmp_path / "open.db")
    try:
        with TestClient(create_app(service)) as client:
            assert client.get("/").status_code == 200
            sid = client.post("/api/v1/sessions", json={"claim": CLAIM}).json()["sid"]
            assert client.post(f"/api/v1/sessions/{sid}/step", json={}).status_code == 200
            assert client.delete(f"/api/v1/sessions/{sid}").json()["actor"] == "api"
            assert "csrf-token" not in client.get("/").text
    finally:
        service.close()


def test_revoking_every_key_keeps_the_server_locked(world: World) -> None:
    store = world.service.engine.store
    for role in ROLES:
        store.revoke_key(f"k-{role}", at=stamp(NOW))
    r = world.client.get("/api/v1/sessions", headers=_bearer(world.keys["admin"]))
    assert r.status_code == 401
    assert world.client.get("/api/v1/sessions").status_code == 401


def _login(client: TestClient, key: str, **headers: str) -> Any:
    return client.post("/login", data={"key": key, "next": "/replay"}, headers=headers,
                       follow_redirects=False)


def _token(client: TestClient) -> str:
    found = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/").text)
    assert found is not None
    return found.group(1)


def test_login_cookie_csrf_and_logout(world: World) -> None:
    c = world.client
    assert c.get("/login").status_code == 200
    r = _login(c, world.keys["revoked"])
    assert r.status_code == 401 and "AUTH_REQUIRED" in r.text and "set-cookie" not in r.headers
    r = _login(c, world.keys["write"])
    assert r.status_code == 303 and r.headers["location"] == "/replay"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" not in cookie
    assert world.keys["write"] not in cookie
    page = c.get("/").text
    assert 'id="viewer">k-write (write)' in page and 'action="/logout"' in page
    token = _token(c)

    # A change with the cookie needs the login's token, in a header or a form's first field.
    r = c.post("/api/v1/sessions", json={"claim": CLAIM})
    assert r.status_code == 403 and r.json()["error"]["code"] == "CSRF_FAILED"
    for wrong in (b"x" * 43, "\u00e9t\u00e9".encode("latin-1"), b""):
        r = c.post("/api/v1/sessions", json={"claim": CLAIM}, headers={"X-CSRF-Token": wrong})
        assert r.status_code == 403 and r.json()["error"]["code"] == "CSRF_FAILED", wrong
    r = c.post("/api/v1/sessions", json={"claim": CLAIM}, headers={"X-CSRF-Token": token})
    assert r.status_code == 201
    upload = {"file": ("a.jsonl", b"not a record\n")}
    r = c.post("/replay", data={"name": "", "mode": "strict"}, files=upload)
    assert r.status_code == 403 and "CSRF_FAILED" in r.text
    r = c.post("/replay", data={"csrf": token, "name": "", "mode": "strict"}, files=upload)
    assert r.status_code == 422 and "BAD_RECORD" in r.text  # past the guard: the record's
    assert f'name="csrf" value="{token}"' in c.get("/replay").text
    # The role still applies to a login: write may not delete.
    r = c.delete(f"/api/v1/sessions/{world.sid}", headers={"X-CSRF-Token": token})
    assert r.status_code == 403 and r.json()["error"]["code"] == "FORBIDDEN"

    assert c.post("/logout", follow_redirects=False).status_code == 403
    r = c.post("/logout", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert c.get("/", follow_redirects=False).status_code == 303
    assert c.get("/api/v1/sessions").status_code == 401


def test_the_cookie_is_secure_behind_an_https_proxy_and_next_stays_local(
        world: World) -> None:
    r = _login(world.client, world.keys["read"], **{"X-Forwarded-Proto": "https"})
    assert r.status_code == 303 and "Secure" in r.headers["set-cookie"]
    for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        r = world.client.post("/login", data={"key": world.keys["read"], "next": evil},
                              follow_redirects=False)
        assert r.headers["location"] == "/", evil


def test_a_hostile_login_form_is_refused_cleanly(world: World) -> None:
    c = world.client
    r = c.post("/login", content=b"key=" + b"a" * 5000,
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413 and "INPUT_TOO_LARGE" in r.text
    r = c.post("/login", content=b"&".join(b"f%d=1" % i for i in range(10)),
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 422 and "BAD_INPUT" in r.text
    r = c.post("/login", content="key=\u00e9".encode(), follow_redirects=False,
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 401 and "set-cookie" not in r.headers


def test_revoking_a_key_ends_its_logins(world: World) -> None:
    assert _login(world.client, world.keys["review"]).status_code == 303
    assert world.client.get("/").status_code == 200
    world.service.engine.store.revoke_key("k-review", at=stamp(NOW))
    assert world.client.get("/", follow_redirects=False).status_code == 303


def test_the_key_list_is_cached_for_the_ttl(tmp_path: Path) -> None:
    service = make_service(tmp_path / "ttl.db")
    store = service.engine.store
    text, row = new_key("ann", "read", now=NOW)
    store.add_key(row)
    now = [1000.0]
    gate = Gate(store, ttl=5.0, clock=lambda: now[0])
    try:
        with TestClient(create_app(service, gate=gate)) as client:
            assert client.get("/api/v1/sessions", headers=_bearer(text)).status_code == 200
            store.revoke_key("ann", at=stamp(NOW))
            now[0] += 4.9  # still the cached list: revocation takes up to the ttl
            assert client.get("/api/v1/sessions", headers=_bearer(text)).status_code == 200
            now[0] += 0.2
            assert client.get("/api/v1/sessions", headers=_bearer(text)).status_code == 401
    finally:
        service.close()


def test_bad_keys_and_failed_logins_are_throttled_per_address(tmp_path: Path) -> None:
    service = make_service(tmp_path / "slow.db")
    store = service.engine.store
    text, row = new_key("ann", "read", now=NOW)
    store.add_key(row)
    now = [1000.0]
    gate = Gate(store, ttl=0, clock=lambda: now[0])
    try:
        with TestClient(create_app(service, gate=gate)) as client:
            for _ in range(5):
                assert client.get("/api/v1/sessions",
                                  headers=_bearer(text + "x")).status_code == 401
            for _ in range(5):
                assert _login(client, "cfk_nonsense").status_code == 401
            for attempt in (text + "x", text):  # blocked: the right key too
                r = client.get("/api/v1/sessions", headers=_bearer(attempt))
                assert r.status_code == 429 and r.json()["error"]["code"] == "TOO_MANY_ATTEMPTS"
                assert r.headers["retry-after"] == "60"
            r = _login(client, text)
            assert r.status_code == 429 and "set-cookie" not in r.headers
            now[0] += 30
            assert client.get("/api/v1/sessions",
                              headers=_bearer(text)).headers["retry-after"] == "30"
            now[0] += 31
            assert client.get("/api/v1/sessions", headers=_bearer(text)).status_code == 200
    finally:
        service.close()


def test_the_keys_name_is_the_actor(world: World) -> None:
    c, keys = world.client, world.keys
    r = c.post("/api/v1/sessions", json={"claim": CLAIM, "review": "always"},
               headers=_bearer(keys["write"]))
    sid = r.json()["sid"]
    done = c.post(f"/api/v1/sessions/{sid}/run", json={}, headers=_bearer(keys["write"]))
    assert done.json()["waiting"]["kind"] == "input"
    r = c.post(f"/api/v1/sessions/{sid}/input", headers=_bearer(keys["review"]),
               json={"input": {"decision": "approve"}, "actor": "mallory"})
    assert r.status_code == 200, r.text
    events = [e for rev in world.service.history(sid) for e in rev.events
              if e.get("type") == "InputReceived"]
    assert [e["actor"] for e in events] == ["k-review"]
    r = c.delete(f"/api/v1/sessions/{sid}", headers=_bearer(keys["admin"]))
    assert r.status_code == 200 and r.json()["actor"] == "k-admin"


def test_start_and_rollback_record_the_key_and_replay_exactly(world: World) -> None:
    from claimfsm.replay import parse_record, replay_record

    c, write = world.client, _bearer(world.keys["write"])
    sid = c.post("/api/v1/sessions", json={"claim": CLAIM}, headers=write).json()["sid"]
    c.post(f"/api/v1/sessions/{sid}/run", json={}, headers=write)
    r = c.post(f"/api/v1/sessions/{sid}/rollback", json={"to": 2}, headers=write)
    assert r.status_code == 200, r.text
    history = world.service.history(sid)
    assert history[0].events[0]["actor"] == "k-write"
    assert history[-1].events == [{"type": "Rewind", "to": 2, "actor": "k-write"}]
    record = c.get(f"/api/v1/sessions/{sid}/record", headers=write).content
    assert b'"actor":"k-write"' in record
    report = replay_record(parse_record(record, source="api"), "strict")
    assert report.divergence is None, report.divergence
    # Without keys nothing is added: revision 0 and a rewind are as they always were.
    plain = world.service.start(CLAIM)
    assert "actor" not in plain.events[0]


def test_keys_api(world: World) -> None:
    c, admin = world.client, _bearer(world.keys["admin"])
    r = c.post("/api/v1/keys", json={"name": "bot", "role": "write", "expires": "12h"},
               headers=admin)
    assert r.status_code == 201 and r.headers["location"] == "/api/v1/keys/bot"
    added = r.json()
    assert added["role"] == "write" and added["expires_at"] is not None
    assert c.get("/api/v1/sessions", headers=_bearer(added["key"])).status_code == 200
    listed = c.get("/api/v1/keys", headers=admin)
    assert added["key"] not in listed.text and "digest" not in listed.text
    assert {k["name"]: k["status"] for k in listed.json()["keys"]} == {
        "k-read": "live", "k-review": "live", "k-write": "live", "k-admin": "live",
        "gone": "revoked", "old": "expired", "bot": "live"}
    for body, code in (({"name": "bot", "role": "read"}, "KEY_EXISTS"),
                       ({"name": "x", "role": "boss"}, "BAD_INPUT"),
                       ({"name": "x y", "role": "read"}, "BAD_INPUT"),
                       ({"name": "x", "role": "read", "expires": "3y"}, "BAD_INPUT")):
        r = c.post("/api/v1/keys", json=body, headers=admin)
        assert r.json()["error"]["code"] == code and r.status_code in (409, 422), body
        if code == "BAD_INPUT":
            assert r.json()["error"]["field"] in ("role", "name", "expires"), r.json()
    r = c.delete("/api/v1/keys/bot", headers=admin)
    assert r.status_code == 200 and r.json()["status"] == "revoked"
    # The admin key that added and revoked it is recorded, as on every other write.
    assert (added["created_by"], r.json()["revoked_by"]) == ("k-admin", "k-admin")
    bot = next(k for k in c.get("/api/v1/keys", headers=admin).json()["keys"]
               if k["name"] == "bot")
    assert (bot["created_by"], bot["revoked_by"]) == ("k-admin", "k-admin")
    assert c.get("/api/v1/sessions", headers=_bearer(added["key"])).status_code == 401
    r = c.delete("/api/v1/keys/bot", headers=admin)
    assert r.status_code == 404 and r.json()["error"]["code"] == "UNKNOWN_KEY"


def test_no_key_in_the_logs(world: World, capfd: pytest.CaptureFixture[str]) -> None:
    from claimfsm.observe.logs import setup_logging, stop_logging

    out = io.StringIO()
    handler = setup_logging("json", out)
    try:
        c, keys = world.client, world.keys
        sid = c.post("/api/v1/sessions", json={"claim": CLAIM},
                     headers=_bearer(keys["write"])).json()["sid"]
        c.post(f"/api/v1/sessions/{sid}/run", json={}, headers=_bearer(keys["write"]))
        for bad in BAD:
            c.get("/api/v1/sessions", headers=_bearer(keys[bad]))
        _login(c, keys["read"])
        _login(c, keys["revoked"])
    finally:
        stop_logging(handler)
    logged = out.getvalue() + "".join(capfd.readouterr())
    assert '"sid"' in out.getvalue()  # the steps were logged
    import json

    requests = [json.loads(line) for line in out.getvalue().splitlines()
                if '"event":"request"' in line]
    actors = {(r["method"], r["status"], r["actor"]) for r in requests}
    assert ("POST", 201, "k-write") in actors and ("GET", 401, "-") in actors
    for text in keys.values():
        assert text not in logged and text[len("cfk_") + 13:] not in logged
