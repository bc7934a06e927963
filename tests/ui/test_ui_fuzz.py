"""Hypothesis over every ``/api/v1`` operation's query, path and body (the table the
OpenAPI document is built from): whatever arrives, the answer is never a 500, always a
JSON error with a code of the list when it is refused, and a refused request writes
nothing to the store. Derandomized: CI runs the same examples every time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm import ErrorCode  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.openapi import ENDPOINTS, Op  # noqa: E402
from tests.support.ui_helpers import make_service  # noqa: E402

OPS = [op for op in ENDPOINTS if op.op_id != "getOpenapi"]
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(["0", "1", "3.0", "true", "", "DONE", "VERIFY", "lexical"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
QUERY_TEXT = (st.text(max_size=24) | st.integers(min_value=-(2**80), max_value=2**80).map(str)
              | st.floats(allow_nan=False).map(str)
              | st.sampled_from(["", "SUPPORTS", "none", "MAYBE", "WAITING", "1e3", "²"]))
REVIEW = st.fixed_dictionaries({"decision": st.sampled_from(["approve", "override", "send_back",
                                                             "x"])},
                                optional={"verdict": SCALARS, "reason": SCALARS,
                                          "queries": VALUES, "doc_ids": VALUES})
KINDS = st.sampled_from(["application/json", "application/json", "APPLICATION/JSON",
                         "application/jsonx", "text/plain", "multipart/form-data", ""])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[TestClient, Any, list[str]]]:
    service = make_service(Path(tmp_path_factory.mktemp("fuzz")) / "fuzz.db")
    with TestClient(create_app(service), raise_server_exceptions=False) as client:
        sid = client.post("/api/v1/sessions", json={"claim": "Honey never spoils."}).json()
        client.post(f"/api/v1/sessions/{sid['sid']}/step", json={})
        # One waiting for a review: input and edit reach past their NOT_WAITING check.
        waits = client.post("/api/v1/sessions", json={
            "claim": "NASA landed on the Moon in 1969.", "review": "always"}).json()["sid"]
        assert client.post(f"/api/v1/sessions/{waits}/run", json={}).json()["status"] == (
            "WAITING")
        yield client, service, [sid["sid"], waits]
    service.close()


def _snapshot(service: Any) -> dict[str, int]:
    store = service.engine.store
    return {sid: store.head(sid).rev for sid in store.sessions()}


def _fields(op: Op) -> list[str]:
    names: list[str] = []
    for model in (op.query, op.body):
        if model is not None:
            names += list(model.model_fields)
    return names or ["x"]


@st.composite
def requests(draw: st.DrawFn, op: Op, sids: list[str]) -> dict[str, Any]:
    names = _fields(op)
    path = op.path.replace("{sid}", draw(st.sampled_from([*sids, "nope", "a%2Fb", "%00"])))
    path = path.replace("{rev}", quote(draw(QUERY_TEXT | st.just("0")), safe="") or "0")
    path = path.replace("{doc_id}", quote(draw(st.text(min_size=1, max_size=12)), safe=""))
    query = draw(st.dictionaries(st.sampled_from([*names, "x"]), QUERY_TEXT, max_size=4))
    out: dict[str, Any] = {"method": op.method.upper(), "url": path, "params": query,
                           "headers": {}}
    if op.body is not None or op.method != "get":
        fields = dict.fromkeys(names, VALUES)
        if "input" in fields:
            fields["input"] = REVIEW | VALUES
        body = draw(st.fixed_dictionaries({}, optional=fields) | VALUES)
        kind = draw(KINDS)
        out["content"] = json.dumps(body).encode()
        if kind:
            out["headers"]["content-type"] = kind
    return out


@pytest.mark.parametrize("op", OPS, ids=[op.op_id for op in OPS])
def test_no_request_gets_a_500_or_writes_when_refused(
        world: tuple[TestClient, Any, list[str]], op: Op) -> None:
    client, service, sids = world

    # A hang guard, not a performance figure: no example may take a minute.
    @settings(max_examples=25, derandomize=True, deadline=timedelta(seconds=60),
              suppress_health_check=list(HealthCheck))
    @given(request=requests(op, sids))
    def check(request: dict[str, Any]) -> None:
        before = _snapshot(service)
        r = client.request(**request)
        assert r.status_code < 500, (request, r.status_code, r.text[:300])
        if r.status_code >= 400:
            err = r.json()["error"]
            assert err["code"] in ErrorCode.__members__ and err["msg"], err
            assert ErrorCode[err["code"]].http == r.status_code
            assert _snapshot(service) == before, (request, r.text[:300])

    check()
