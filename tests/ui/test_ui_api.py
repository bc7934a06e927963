"""The HTTP API through the ASGI test client: every endpoint, its JSON shape (the CLI's),
and every error as a code with the right HTTP status, never a traceback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module, without_semantic

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.engine.runtime import FIXTURES  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.openapi import openapi  # noqa: E402
from tests.replay.sealing import reseal  # noqa: E402
from tests.support.ui_helpers import app_client  # noqa: E402

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _start(client: TestClient, claim: str = CLAIM) -> dict[str, Any]:
    r = client.post("/api/v1/sessions", json={"claim": claim})
    assert r.status_code == 201, r.text
    return dict(r.json())


def _error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["msg"]
    return dict(err)


def test_start_step_run_like_the_cli(client: TestClient) -> None:
    started = _start(client)
    assert started["rev"] == 0 and started["fsm"] == "PARSE_CLAIM"
    assert started["profile"] == {"retrieval": "lexical", "judge": "lexical", "stance_model": None}
    sid = started["sid"]
    step = client.post(f"/api/v1/sessions/{sid}/step", json={}).json()
    assert set(step) == {"sid", "before", "after", "skill", "committed", "rev", "envelope"}
    assert (step["before"], step["after"], step["rev"], step["committed"]) == (
        "PARSE_CLAIM", "RETRIEVAL", 1, True)
    assert step["envelope"]["s"] == "ok" and step["envelope"]["d"]["sp"]["rev"] == 1
    done = client.post(f"/api/v1/sessions/{sid}/run", json={}).json()
    assert done["fsm"] == "DONE" and done["verdict"] == "SUPPORTS"
    assert done["subclaims"][0]["evidence"][0]["id"].startswith("apollo-11")
    again = client.post(f"/api/v1/sessions/{sid}/step", json={})
    _error(again, 409, "SESSION_FINISHED")


def test_session_head_history_revision(client: TestClient) -> None:
    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    info = client.get(f"/api/v1/sessions/{sid}").json()
    assert info["summary"]["claim"] == CLAIM and info["summary"]["verdict"] == "SUPPORTS"
    head = info["head"]["rev"]
    full = client.get(f"/api/v1/sessions/{sid}/head").json()
    assert full["rev"] == head and full["state"]["verdict"]["label"] == "SUPPORTS"
    assert client.get(f"/api/v1/sessions/{sid}/head?brief=1").json() == {
        "sid": sid, "rev": head, "fsm": "DONE", "ts": full["ts"]}
    page = client.get(f"/api/v1/sessions/{sid}/history?limit=3").json()
    assert [r["rev"] for r in page["items"]] == [0, 1, 2] and page["total"] == head + 1
    assert page["next_offset"] == 3 and "state" not in page["items"][0]
    rest = client.get(f"/api/v1/sessions/{sid}/history?offset=3&limit=1000").json()
    assert rest["items"][-1]["rev"] == head and rest["next_offset"] is None
    one = client.get(f"/api/v1/sessions/{sid}/revisions/1").json()
    assert one["rev"] == 1 and one["state"]["fsm"] == "RETRIEVAL"


def test_diff_names_the_fields_a_step_changed(client: TestClient) -> None:
    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/step", json={})
    changes = client.get(f"/api/v1/sessions/{sid}/diff?a=0&b=1").json()["changes"]
    paths = {c["path"]: c for c in changes}
    assert paths["fsm"] == {"path": "fsm", "op": "changed", "before": "PARSE_CLAIM",
                            "after": "RETRIEVAL"}
    assert paths["state.subclaims[0]"]["op"] == "added"
    assert client.get(f"/api/v1/sessions/{sid}/diff?a=1&b=1").json()["changes"] == []
    _error(client.get(f"/api/v1/sessions/{sid}/diff?a=0"), 422, "BAD_INPUT")
    _error(client.get(f"/api/v1/sessions/{sid}/diff?a=0&b=9"), 404, "UNKNOWN_REVISION")


def test_rollback_and_fork(client: TestClient) -> None:
    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    head = client.get(f"/api/v1/sessions/{sid}/head?brief=1").json()["rev"]
    back = client.post(f"/api/v1/sessions/{sid}/rollback", json={"to": 1, "expected_rev": head})
    assert back.status_code == 200 and back.json()["rev"] == head + 1
    assert back.json()["fsm"] == "RETRIEVAL"
    stale = client.post(f"/api/v1/sessions/{sid}/rollback", json={"to": 1, "expected_rev": head})
    assert _error(stale, 409, "REV_CONFLICT")["msg"].startswith(f"head is {head + 1}")
    forked = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2})
    assert forked.status_code == 201
    new = forked.json()["sid"]
    assert new != sid and forked.json()["rev"] == 3
    hist = client.get(f"/api/v1/sessions/{new}/history").json()
    assert hist["total"] == 4
    _error(client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 99}), 404,
           "UNKNOWN_REVISION")


def test_step_refuses_a_stale_page(client: TestClient) -> None:
    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/step", json={})
    r = client.post(f"/api/v1/sessions/{sid}/step", json={"expected_rev": 0})
    _error(r, 409, "REV_CONFLICT")
    assert client.get(f"/api/v1/sessions/{sid}/head?brief=1").json()["rev"] == 1


def test_sessions_listing_filters_and_pages(client: TestClient) -> None:
    sids = [_start(client, f"Claim number {i} about the Moon.")["sid"] for i in range(5)]
    client.post(f"/api/v1/sessions/{sids[0]}/run", json={})
    page = client.get("/api/v1/sessions?limit=2").json()
    assert [s["sid"] for s in page["items"]] == sids[::-1][:2] and page["next"] is not None
    rest = client.get(f"/api/v1/sessions?limit=10&before={page['next']}").json()
    assert [s["sid"] for s in rest["items"]] == sids[::-1][2:] and rest["next"] is None
    only = client.get("/api/v1/sessions?q=number 3").json()["items"]
    assert [s["sid"] for s in only] == [sids[3]]
    done = client.get("/api/v1/sessions?fsm=DONE").json()["items"]
    assert [s["sid"] for s in done] == [sids[0]]
    assert done[0]["verdict"] is not None and done[0]["revisions"] > 5
    none = client.get("/api/v1/sessions?verdict=none").json()["items"]
    assert sids[0] not in {s["sid"] for s in none} and len(none) == 4
    _error(client.get("/api/v1/sessions?limit=0"), 422, "BAD_INPUT")
    _error(client.get("/api/v1/sessions?before=x"), 422, "BAD_INPUT")


@pytest.mark.parametrize(("body", "field"), [
    ({}, "claim"), ({"claim": ""}, "claim"), ({"claim": "x", "extra": 1}, "extra"),
    ({"claim": "x", "retrieval": "magic"}, "retrieval"),
])
def test_bad_start_bodies_name_the_field(client: TestClient, body: dict[str, Any],
                                         field: str) -> None:
    err = _error(client.post("/api/v1/sessions", json=body), 422, "BAD_INPUT")
    assert err["field"] == field and err["msg"].startswith(field)


def test_bad_bodies_and_limits(client: TestClient) -> None:
    sid = _start(client)["sid"]
    json_type = {"content-type": "application/json"}
    _error(client.post(f"/api/v1/sessions/{sid}/step", content=b"{nope", headers=json_type),
           422, "BAD_INPUT")
    # A form post from another site (no JSON content type) drives nothing.
    form = client.post(f"/api/v1/sessions/{sid}/step", data={"expected_rev": "0"})
    _error(form, 415, "UNSUPPORTED_MEDIA_TYPE")
    _error(client.post("/api/v1/sessions", content=b'{"claim": "x"}'), 415,
           "UNSUPPORTED_MEDIA_TYPE")
    assert client.get(f"/api/v1/sessions/{sid}/head?brief=1").json()["rev"] == 0
    err = _error(client.post(f"/api/v1/sessions/{sid}/rollback", json={"to": -1}), 422,
                 "BAD_INPUT")
    assert err["field"] == "to"
    _error(client.post("/api/v1/sessions", json={"claim": "x" * 5000}), 413, "INPUT_TOO_LARGE")
    _error(client.post(f"/api/v1/sessions/{sid}/step", content=b" " * (2 << 20),
                       headers=json_type), 413, "INPUT_TOO_LARGE")
    _error(client.get(f"/api/v1/sessions/{sid}/revisions/abc"), 422, "BAD_INPUT")


def test_unknown_things_are_404(client: TestClient) -> None:
    for r in (client.get("/api/v1/sessions/nope"), client.get("/api/v1/sessions/nope/head"),
              client.post("/api/v1/sessions/nope/step", json={}),
              client.get("/api/v1/sessions/nope/report")):
        _error(r, 404, "UNKNOWN_SESSION")
    sid = _start(client)["sid"]
    _error(client.get(f"/api/v1/sessions/{sid}/revisions/7"), 404, "UNKNOWN_REVISION")
    _error(client.get("/api/v1/documents/nope"), 404, "NOT_FOUND")
    _error(client.get("/api/v1/nothing"), 404, "NOT_FOUND")
    _error(client.delete("/api/v1/sessions"), 405, "METHOD_NOT_ALLOWED")
    assert client.get("/api/v1/documents/apollo-11").json()["doc_id"] == "apollo-11"


def test_failed_session_needs_reopen(client: TestClient) -> None:
    r = client.post("/api/v1/sessions", json={"claim": "?!"})
    sid = r.json()["sid"]
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    assert client.get(f"/api/v1/sessions/{sid}/head?brief=1").json()["fsm"] == "FAILED"
    _error(client.post(f"/api/v1/sessions/{sid}/rollback", json={"to": 0}), 409,
           "SESSION_FAILED")
    ok = client.post(f"/api/v1/sessions/{sid}/rollback", json={"to": 0, "reopen": True})
    assert ok.status_code == 200 and ok.json()["fsm"] == "PARSE_CLAIM"


def test_replay_offered_uploaded_and_diverging(client: TestClient) -> None:
    names = client.get("/api/v1/records").json()["records"]
    assert "supported.jsonl" in names
    ok = client.post("/api/v1/replay", json={"name": "supported.jsonl"}).json()
    assert ok["ok"] is True and ok["actual"]["verdict"] == "SUPPORTS"
    data = (FIXTURES / "sessions" / "refuted.jsonl").read_bytes()
    up = client.post("/api/v1/replay", data={"mode": "tools"},
                     files={"file": ("mine.jsonl", data)}).json()
    assert up["ok"] is True and up["mode"] == "tools" and up["source"] == "mine.jsonl"
    lines = data.splitlines()
    lines[2] = reseal(lines[2].replace(b'"s":"ok"', b'"s":"retry"', 1))  # a changed engine
    bad = client.post("/api/v1/replay", files={"file": ("t.jsonl", b"\n".join(lines) + b"\n")})
    report = bad.json()
    assert report["ok"] is False and report["divergence"]["kind"] == "ENVELOPE_MISMATCH"
    assert report["divergence"]["line"] == 3 and report["divergence"]["path"] == "s"
    _error(client.post("/api/v1/replay", files={"file": ("x.jsonl", b"not json\n")}), 422,
           "BAD_RECORD")
    _error(client.post("/api/v1/replay", json={"name": "../../etc/passwd"}), 422, "BAD_INPUT")
    _error(client.post("/api/v1/replay", json={"name": "supported.jsonl", "mode": "x"}), 422,
           "BAD_INPUT")


def test_report_and_machine(client: TestClient) -> None:
    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    r = client.get(f"/api/v1/sessions/{sid}/report")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "attachment" in r.headers["content-disposition"] and "<svg" in r.text
    machine = client.get("/api/v1/machine").json()
    assert machine["initial"] == "PARSE_CLAIM" and ["AGGREGATE", "DONE"] in machine["transitions"]


def test_an_unexpected_error_is_one_internal_line(client: TestClient, monkeypatch: Any) -> None:
    from claimfsm.ui.service import Service

    def boom(*a: Any, **k: Any) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(Service, "sessions", boom)
    with TestClient(client.app, raise_server_exceptions=False) as c:
        err = _error(c.get("/api/v1/sessions"), 500, "INTERNAL")
        assert err["msg"] == "RuntimeError: kaput"
        assert "Traceback" not in c.get("/").text


def test_openapi_lists_every_api_route(client: TestClient) -> None:
    served = client.get("/api/v1/openapi.json").json()
    records = client.get("/api/v1/records").json()["records"]
    assert served == openapi(None, records) and served["openapi"].startswith("3.")
    assert served["components"]["schemas"]["ReplayRequest"]["properties"]["name"][
        "enum"] == records
    routes = {(m.lower(), r.path) for r in client.app.routes  # type: ignore[attr-defined]
              for m in (r.methods or ()) if r.path.startswith("/api/") and m != "HEAD"}
    documented = {(m, p) for p, ops in served["paths"].items() for m in ops}
    assert routes == documented
    ids = [op["operationId"] for ops in served["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)) == len(documented)
    for ops in served["paths"].values():
        for op in ops.values():
            success = [s for s in op["responses"] if s.startswith("2")]
            assert len(success) == 1 and op["responses"][success[0]]["content"]
            # Only what the operation can answer: a read of the listing has no 404 or 409.
            assert {"421", "403", "500"} <= set(op["responses"])
    listing = served["paths"]["/api/v1/sessions"]["get"]["responses"]
    assert not {"404", "409", "413", "415"} & set(listing)


def test_export_is_what_the_cli_writes_and_check_verifies(client: TestClient,
                                                          tmp_path: Path) -> None:
    from click.testing import CliRunner

    from claimfsm.cli.main import main

    sid = _start(client)["sid"]
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    r = client.get(f"/api/v1/sessions/{sid}/record")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    db = str(tmp_path / "ui.db")
    cli = CliRunner().invoke(main, ["export", sid, "--db", db])
    assert cli.exit_code == 0 and r.content == cli.stdout_bytes
    replayed = client.post("/api/v1/replay", files={"file": ("x.jsonl", r.content)}).json()
    assert replayed["ok"] is True
    check = client.get(f"/api/v1/sessions/{sid}/check").json()
    assert check["ok"] is True and check["problem"] is None and check["revisions"] > 5
    _error(client.get("/api/v1/sessions/nope/record"), 404, "UNKNOWN_SESSION")
    _error(client.get("/api/v1/sessions/nope/check"), 404, "UNKNOWN_SESSION")


def test_the_api_over_postgresql(pg_server: Any) -> None:
    from claimfsm.ui.service import Service

    service = Service.open(pg_server.new_schema())
    with TestClient(create_app(service)) as c:
        sid = _start(c)["sid"]
        assert c.post(f"/api/v1/sessions/{sid}/run", json={}).json()["verdict"] == "SUPPORTS"
        other = _start(c, "Honey never spoils.")["sid"]
        listed = c.get("/api/v1/sessions?verdict=SUPPORTS").json()["items"]
        assert [s["sid"] for s in listed] == [sid]
        assert [s["sid"] for s in c.get("/api/v1/sessions?q=HONEY").json()["items"]] == [other]
        forked = c.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2}).json()["sid"]
        page = c.get("/api/v1/sessions?limit=2").json()
        assert [s["sid"] for s in page["items"]] == [forked, other] and page["next"]
        assert c.get(f"/sessions/{sid}").status_code == 200
    service.close()


def test_hostile_requests_get_codes_never_a_500(client: TestClient) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sid = _start(client)["sid"]
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8),
                                                                   inner, max_size=4),
        max_leaves=10)
    paths = st.sampled_from([f"/api/v1/sessions/{sid}/{op}" for op in
                             ("step", "run", "rollback", "fork")] + ["/api/v1/sessions",
                                                                     "/api/v1/replay"])
    expected = {200, 201, 404, 409, 413, 415, 422}

    @settings(max_examples=int(os.environ.get("CLAIMFSM_UI_FUZZ", "60")), deadline=None,
              derandomize="CLAIMFSM_UI_FUZZ" not in os.environ,
              suppress_health_check=list(HealthCheck))
    @given(path=paths, body=json_values, segment=st.text(min_size=1, max_size=30))
    def hostile(path: str, body: Any, segment: str) -> None:
        r = client.post(path, json=body)
        assert r.status_code in expected, (path, body, r.text)
        if r.status_code >= 400:
            assert set(r.json()["error"]) <= {"code", "msg", "field"}
        from urllib.parse import quote

        for url in (f"/api/v1/sessions/{quote(segment, safe='')}",
                    f"/api/v1/sessions/{sid}/revisions/{quote(segment, safe='')}",
                    f"/api/v1/sessions?limit={quote(segment, safe='')}",
                    f"/api/v1/sessions/{sid}/diff?a={quote(segment, safe='')}&b=0"):
            got = client.get(url)
            assert got.status_code in {200, 404, 422}, (url, got.text)

    hostile()


def test_start_takes_the_config_file_and_checks_the_profile(
        client: TestClient, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claimfsm.toml").write_text('judge = "oracle"\n')
    err = _error(client.post("/api/v1/sessions", json={"claim": CLAIM}), 422, "BAD_PROFILE")
    assert "claimfsm.toml" in err["msg"]
    (tmp_path / "claimfsm.toml").write_text('retrieval = "lexical"\n')
    started = _start(client)
    assert started["profile"]["retrieval"] == "lexical"
    missing = client.post("/api/v1/sessions",
                          json={"claim": CLAIM, "stance_model": str(tmp_path / "no.npz")})
    _error(missing, 422, "MODEL_NOT_FOUND")
    without_semantic(monkeypatch)  # what a server without the extra answers
    hybrid = client.post("/api/v1/sessions", json={"claim": CLAIM, "retrieval": "hybrid"})
    _error(hybrid, 422, "SEMANTIC_UNAVAILABLE")
    assert client.get("/api/v1/sessions").json()["items"][0]["sid"] == started["sid"]
