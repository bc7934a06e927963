"""Issue 26, item 5: the hostile requests found from a browser and curl on 127.0.0.1,
each answered with a code and the right status, never a 500, and nothing written by a
refused request. Through the ASGI app; tests/ui/test_ui_slow.py drives a real server."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm import ErrorCode  # noqa: E402
from claimfsm._base.errors import ClaimFsmError  # noqa: E402
from claimfsm.engine.runtime import FIXTURES  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.openapi import openapi  # noqa: E402
from tests.replay.sealing import reseal  # noqa: E402
from tests.support.ui_helpers import make_service  # noqa: E402

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Any]:
    svc = make_service(tmp_path / "ui.db")
    yield svc
    svc.close()


@pytest.fixture
def client(service: Any) -> Iterator[TestClient]:
    with TestClient(create_app(service), raise_server_exceptions=False) as c:
        yield c


def _error(r: Any, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["msg"], err
    if field is not None:
        assert err.get("field") == field, err
    return dict(err)


def _count(service: Any) -> int:
    return len(service.engine.store.sessions())


def _started(client: TestClient) -> str:
    r = client.post("/api/v1/sessions", json={"claim": CLAIM})
    assert r.status_code == 201, r.text
    return str(r.json()["sid"])


@pytest.mark.parametrize("url,field", [
    ("/api/v1/sessions?before=99999999999999999999999", "before"),
    (f"/api/v1/sessions?before={2**63}", "before"),
    ("/api/v1/sessions?limit=99999999999999999999999", "limit"),
    ("/api/v1/sessions?limit=0", "limit"),
    ("/api/v1/sessions?before=3.0", "before"),
    ("/api/v1/sessions?before=true", "before"),
    ("/api/v1/sessions?before=%C2%B2", "before"),  # "²" is a digit to str.isdigit
    ("/api/v1/sessions?verdict=MAYBE", "verdict"),
    ("/api/v1/sessions?status=DONE", "status"),
    ("/api/v1/sessions/s/history?offset=99999999999999999999999", "offset"),
    ("/api/v1/sessions/s/history?limit=1e3", "limit"),
    ("/api/v1/sessions/s/revisions/99999999999999999999999", "rev"),
    ("/api/v1/sessions/s/revisions/-1", "rev"),
    ("/api/v1/sessions/s/diff?a=0&b=99999999999999999999999", "b"),
    ("/api/v1/sessions/s/diff?a=0", "b"),
    ("/?before=99999999999999999999999", None),
    ("/?verdict=MAYBE", None),
    ("/review?limit=%C2%B2", None),
])
def test_out_of_range_and_unknown_query_values_are_422(client: TestClient, url: str,
                                                       field: str | None) -> None:
    r = client.get(url)
    assert r.status_code == 422, r.text
    if field is not None:
        _error(r, 422, "BAD_INPUT", field)
    else:
        assert "BAD_INPUT" in r.text and "Traceback" not in r.text


@pytest.mark.parametrize("path,body,field", [
    ("rollback", {"to": True}, "to"),
    ("rollback", {"to": "3"}, "to"),
    ("rollback", {"to": 3.0}, "to"),
    ("rollback", {"to": 2**70}, "to"),
    ("rollback", {"to": 2**63}, "to"),
    ("rollback", {"to": 0, "reopen": "yes"}, "reopen"),
    ("step", {"expected_rev": True}, "expected_rev"),
    ("step", {"expected_rev": "0"}, "expected_rev"),
    ("run", {"max_steps": 2.0}, "max_steps"),
    ("run", {"max_steps": 10**30}, "max_steps"),
    ("fork", {"at": False}, "at"),
    ("fork", {"at": 1e30}, "at"),
])
def test_numbers_in_bodies_are_strict_json_integers(client: TestClient, service: Any,
                                                    path: str, body: dict[str, Any],
                                                    field: str) -> None:
    sid = _started(client)
    before = service.head(sid)
    _error(client.post(f"/api/v1/sessions/{sid}/{path}", json=body), 422, "BAD_INPUT", field)
    assert service.head(sid) == before and _count(service) == 1  # nothing written


def test_media_types_are_parsed_not_prefix_matched(client: TestClient, service: Any) -> None:
    body = orjson.dumps({"claim": CLAIM})
    for kind in ("APPLICATION/JSON", "application/json; charset=UTF-8", "Application/Json ;x=1"):
        r = client.post("/api/v1/sessions", content=body, headers={"content-type": kind})
        assert r.status_code == 201, (kind, r.text)
    n = _count(service)
    for kind in ("application/jsonx", "application/json-patch+json", "text/plain",
                 "application/json; charset=latin-1", "application", "multipart/form-data"):
        r = client.post("/api/v1/sessions", content=body, headers={"content-type": kind})
        _error(r, 415, "UNSUPPORTED_MEDIA_TYPE", "content-type")
    assert _count(service) == n
    # No body at all (curl -X POST): the model's defaults.
    sid = _started(client)
    assert client.post(f"/api/v1/sessions/{sid}/step").status_code == 200


def _asgi(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]],
          chunks: Iterator[bytes]) -> tuple[int, int, bytes]:
    """Call ``app`` with a body streamed from ``chunks``; the status, how many chunks the
    app pulled, and the body of the answer."""
    pulled = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        pulled += 1
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8765), "state": {}}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, pulled, body


def test_a_chunked_body_is_refused_while_it_is_read(service: Any) -> None:
    app = create_app(service)
    mib = b"x" * (1 << 20)
    chunks = iter([mib] * 20)  # 20 MB, no content-length: chunked
    headers = [(b"host", b"127.0.0.1:8765"), (b"content-type", b"application/json"),
               (b"transfer-encoding", b"chunked")]
    status, pulled, body = _asgi(app, "POST", "/api/v1/sessions", headers, chunks)
    assert status == 413 and orjson.loads(body)["error"]["code"] == "INPUT_TOO_LARGE"
    assert pulled <= 2  # 1 MiB is the limit: never the whole 20 MB
    # A declared length over the limit is refused before a byte of the body is read.
    chunks = iter([mib] * 20)
    headers[-1] = (b"content-length", str(20 << 20).encode())
    status, pulled, _ = _asgi(app, "POST", "/api/v1/sessions", headers, chunks)
    assert (status, pulled) == (413, 0)
    # An upload has its own, larger limit, also applied while reading.
    part = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="r.jsonl"\r\n'
            b'Content-Type: application/octet-stream\r\n\r\n')
    chunks = iter([part] + [mib] * 40)
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"multipart/form-data; boundary=b")]
    status, pulled, _ = _asgi(app, "POST", "/api/v1/replay", headers, chunks)
    assert status == 413 and 33 <= pulled <= 35
    assert _count(service) == 0


def test_only_the_bound_and_configured_host_names_are_served(service: Any) -> None:
    app = create_app(service, allowed_hosts=["claims.example.org"])
    with TestClient(app, raise_server_exceptions=False) as c:
        # The name the connection came in on (the test client's "testserver") is served,
        # and so is the configured one, with any port.
        assert c.get("/api/v1/machine").status_code == 200
        assert c.get("/", headers={"host": "claims.example.org:443"}).status_code == 200
        for host in ("rebind.attacker.example", "127.0.0.1.attacker.example", "",
                     "claims.example.org.evil"):
            _error(c.get("/api/v1/sessions", headers={"host": host}), 421,
                   "HOST_NOT_ALLOWED", "host")
            r = c.get("/", headers={"host": host})
            assert r.status_code == 421 and "HOST_NOT_ALLOWED" in r.text
        n = _count(service)
        r = c.post("/api/v1/sessions", json={"claim": CLAIM}, headers={"host": "evil.example"})
        _error(r, 421, "HOST_NOT_ALLOWED")
        assert _count(service) == n


def test_state_changing_requests_from_another_origin_are_refused(client: TestClient,
                                                                 service: Any) -> None:
    record = (FIXTURES / "sessions" / "supported.jsonl").read_bytes()
    evil = {"origin": "http://evil.example"}
    # The replay form, posted by a page of another site (a multipart form needs no CORS).
    r = client.post("/replay", files={"file": ("r.jsonl", record)}, headers=evil)
    assert r.status_code == 403 and "CROSS_ORIGIN" in r.text
    _error(client.post("/api/v1/replay", files={"file": ("r.jsonl", record)}, headers=evil),
           403, "CROSS_ORIGIN", "origin")
    _error(client.post("/api/v1/sessions", json={"claim": CLAIM}, headers={
        "sec-fetch-site": "cross-site"}), 403, "CROSS_ORIGIN", "sec-fetch-site")
    _error(client.post("/api/v1/sessions", json={"claim": CLAIM}, headers={
        "origin": "null"}), 403, "CROSS_ORIGIN")
    assert _count(service) == 0
    sid = _started(client)
    for method in ("delete", "patch"):
        r = client.request(method, f"/api/v1/sessions/{sid}", json={"set": {"x": 1}},
                           headers={"sec-fetch-site": "same-site"})
        _error(r, 403, "CROSS_ORIGIN")
    assert service.head(sid).rev == 0
    # The same origin, and scripts (no Origin, no Sec-Fetch-Site), are served.
    same = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
    assert client.post(f"/api/v1/sessions/{sid}/step", json={}, headers=same).status_code == 200
    assert client.post("/replay", files={"file": ("r.jsonl", record)}).status_code == 200
    # Following a link from another site to a page is fine; reading the API is not.
    nav = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    assert client.get(f"/sessions/{sid}", headers=nav).status_code == 200
    _error(client.get("/api/v1/sessions", headers={"sec-fetch-site": "cross-site",
                                                   "sec-fetch-mode": "cors"}), 403,
           "CROSS_ORIGIN")
    assert client.get("/metrics", headers={"sec-fetch-site": "cross-site"}).status_code in (
        403, 404)


def test_stance_model_paths_that_name_no_file_are_422(client: TestClient, service: Any,
                                                      tmp_path: Path) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    cases = [("a" * 100_000, "BAD_INPUT"), ("/" + "a" * 4000, "MODEL_NOT_FOUND"),
             ("/tmp/" + "b" * 300 + "/m.bin", "MODEL_NOT_FOUND"),
             (str(empty), "MODEL_UNAVAILABLE"), ("", "BAD_INPUT")]
    for path, code in cases:
        r = client.post("/api/v1/sessions", json={"claim": CLAIM, "stance_model": path})
        _error(r, 422, code, "stance_model")
    assert _count(service) == 0


def test_a_replay_header_with_an_absurd_limit_is_bad_config_422(client: TestClient) -> None:
    lines = (FIXTURES / "sessions" / "supported.jsonl").read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["config"] = {**header.get("config", {}), "max_tool_calls": 1e30}
    lines[0] = reseal(orjson.dumps(header))
    data = b"\n".join(lines) + b"\n"
    _error(client.post("/api/v1/replay", files={"file": ("t.jsonl", data)}), 422,
           "BAD_CONFIG")
    r = client.post("/replay", files={"file": ("t.jsonl", data)})
    assert r.status_code == 422 and "BAD_CONFIG" in r.text
    _error(client.post("/api/v1/replay", content=b"--x\r\nNone--x--\r\n",
                       headers={"content-type": "multipart/form-data; boundary=x"}), 422,
           "BAD_INPUT", "file")


def test_every_error_code_answers_its_own_status(client: TestClient, monkeypatch: Any) -> None:
    from claimfsm.ui.service import Service

    seen = {}
    for code in ErrorCode:
        def boom(self: Any, sid: str, _code: str = code) -> None:
            raise ClaimFsmError(f"sid: {_code} for the test", code=_code)

        async def aboom(self: Any, sid: str, _code: str = code) -> None:
            raise ClaimFsmError(f"sid: {_code} for the test", code=_code)

        # The API reads the head on the async path, the pages on the sync one.
        monkeypatch.setattr(Service, "head", boom)
        monkeypatch.setattr(Service, "ahead", aboom)
        r = client.get("/api/v1/sessions/abc/head")
        seen[str(code)] = r.status_code
        assert r.json()["error"]["code"] == code
        page = client.get("/sessions/abc")
        assert page.status_code == code.http and str(code) in page.text
    assert seen == {str(c): c.http for c in ErrorCode}
    assert all(400 <= status <= 599 for status in seen.values())


def test_created_answers_carry_location(client: TestClient) -> None:
    r = client.post("/api/v1/sessions", json={"claim": CLAIM})
    sid = r.json()["sid"]
    assert r.status_code == 201 and r.headers["location"] == f"/api/v1/sessions/{sid}"
    assert client.get(r.headers["location"]).json()["head"]["sid"] == sid
    client.post(f"/api/v1/sessions/{sid}/step", json={})
    forked = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 1})
    new = forked.json()["sid"]
    assert forked.status_code == 201 and forked.headers["location"].endswith(f"/{new}")


def test_undeclared_methods_answer_405_with_allow(client: TestClient) -> None:
    spec = openapi()
    for path, ops in spec["paths"].items():
        url = path.replace("{sid}", "abc").replace("{rev}", "0").replace("{doc_id}", "d")
        declared = {m.upper() for m in ops}
        for method in {"GET", "POST", "PUT", "PATCH", "DELETE"} - declared:
            r = client.request(method, url)
            _error(r, 405, "METHOD_NOT_ALLOWED")
            allow = set(r.headers["allow"].split(", "))
            assert allow - {"HEAD"} == declared, (method, path, allow)


def test_the_request_log_names_method_path_status_duration_and_actor(
        client: TestClient) -> None:
    from claimfsm.observe.logs import setup_logging, stop_logging

    out = io.StringIO()
    handler = setup_logging("json", out)
    try:
        client.get("/api/v1/sessions?q=secret-claim-text")
        client.get("/api/v1/machine", headers={"host": "evil.example"})
        client.post("/api/v1/sessions", json={"claim": CLAIM})
    finally:
        stop_logging(handler)
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    requests = [line for line in lines if line["event"] == "request"]
    assert [(r["method"], r["path"], r["status"]) for r in requests] == [
        ("GET", "/api/v1/sessions", 200), ("GET", "/api/v1/machine", 421),
        ("POST", "/api/v1/sessions", 201)]
    assert all(r["ms"] >= 0 and r["actor"] == "-" for r in requests)
    assert "secret-claim-text" not in out.getvalue()  # no query strings in the log
    text = io.StringIO()
    handler = setup_logging("text", text)
    try:
        client.get("/api/v1/sessions/a%0Ab/head")
    finally:
        stop_logging(handler)
    line = text.getvalue().strip()
    assert "\n" not in line and "request" in line and "status=404" in line


def test_claimfsm_ui_serves_its_bound_names_and_the_configured_ones(
        tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    from claimfsm.cli.ui import _served_names

    monkeypatch.chdir(tmp_path)
    assert set(_served_names("127.0.0.1", ("a.example",))) == {
        "127.0.0.1", "a.example", "localhost", "::1"}
    (tmp_path / "claimfsm.toml").write_text('[ui]\nallowed_hosts = ["claims.example.org"]\n')
    assert "claims.example.org" in _served_names("10.0.0.5", ())
    assert "localhost" not in _served_names("10.0.0.5", ())  # not bound to loopback
    (tmp_path / "claimfsm.toml").write_text('[ui]\nallowed_hosts = "claims.example.org"\n')
    with pytest.raises(SystemExit) as stopped:
        _served_names("127.0.0.1", ())
    assert stopped.value.code == 2 and "BAD_CONFIG" in capsys.readouterr().err
