"""Lineage and comparison through the HTTP API and the rendered pages: the fork request's
profile fields, ``forked_from``/``forks`` in the session JSON and the listing, the
comparison JSON and page, the report's lineage, and what the diagram draws (repeated
moves counted, rewinds, a fork's start)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.engine.machine import DEFAULT_MACHINE  # noqa: E402
from claimfsm.state.model import Revision, new_state  # noqa: E402
from claimfsm.ui.diagram import diagram_svg  # noqa: E402
from claimfsm.ui.lineage import history_marks  # noqa: E402
from tests.support.ui_helpers import app_client  # noqa: E402

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _finished(client: TestClient) -> str:
    sid = str(client.post("/api/v1/sessions", json={"claim": CLAIM}).json()["sid"])
    assert client.post(f"/api/v1/sessions/{sid}/run", json={}).json()["fsm"] == "DONE"
    return sid


def _error(r: Any, status: int, code: str, field: str | None = None) -> None:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and (field is None or err.get("field") == field), err


def test_lineage_in_the_session_json_both_ways_and_in_the_listing(client: TestClient) -> None:
    sid = _finished(client)
    made = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2, "retrieval": "hybrid"})
    assert made.status_code == 201, made.text
    fork = made.json()
    assert fork["rev"] == 3 and fork["profile"]["retrieval"] == "hybrid"
    change = {"field": "profile.retrieval", "old": "lexical", "new": "hybrid"}
    assert fork["events"] == [{"type": "Forked", "from": {"sid": sid, "rev": 2},
                               "changes": [change]}]
    child = client.get(f"/api/v1/sessions/{fork['sid']}").json()
    assert child["forked_from"] == {"sid": sid, "rev": 2, "at": fork["ts"], "changes": [change]}
    assert child["forks"] == [] and child["summary"]["updated"] == fork["ts"]
    parent = client.get(f"/api/v1/sessions/{sid}").json()
    assert parent["forked_from"] is None
    assert parent["forks"] == [{"sid": fork["sid"], "rev": 2, "at": fork["ts"]}]
    listed = {i["sid"]: i for i in client.get("/api/v1/sessions").json()["items"]}
    assert listed[fork["sid"]]["forked_from"] == {"sid": sid, "rev": 2, "at": fork["ts"]}
    assert listed[sid]["forked_from"] is None
    done = client.post(f"/api/v1/sessions/{fork['sid']}/run", json={}).json()
    assert done["fsm"] == "DONE"


def test_a_fork_request_that_cannot_run_is_refused_naming_the_field(
        client: TestClient, tmp_path: Path) -> None:
    sid = _finished(client)
    before = client.get("/api/v1/sessions").json()["items"]
    _error(client.post(f"/api/v1/sessions/{sid}/fork",
                       json={"at": 2, "stance_model": str(tmp_path / "none.npz")}),
           422, "MODEL_NOT_FOUND", "stance_model")
    _error(client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2, "judge": "learned"}),
           422, "BAD_PROFILE", "stance_model")
    _error(client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2, "judge": "oracle"}),
           422, "BAD_INPUT", "judge")
    _error(client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 99, "retrieval": "hybrid"}),
           404, "UNKNOWN_REVISION")
    assert client.get("/api/v1/sessions").json()["items"] == before  # nothing stored


def test_compare_json_and_page(client: TestClient) -> None:
    sid = _finished(client)
    fork = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 3}).json()
    client.post(f"/api/v1/sessions/{fork['sid']}/run", json={})
    got = client.get(f"/api/v1/compare?a={sid}&b={fork['sid']}").json()
    assert got["relation"] == f"{fork['sid']} was forked from {sid}@3"
    assert got["same_revisions"] == 4 and got["first_difference"]["rev"] == 4
    assert got["first_difference"]["b"] == {"fsm": fork["fsm"], "skill": None}
    assert got["a"]["verdict"] == got["b"]["verdict"] == "SUPPORTS"
    assert got["b"]["forked_from"]["sid"] == sid and got["a"]["subclaims"][0]["evidence"]
    same = client.get(f"/api/v1/compare?a={sid}&b={sid}").json()
    assert same["first_difference"] is None and same["relation"] is None
    page = client.get(f"/compare?a={sid}&b={fork['sid']}")
    assert page.status_code == 200
    assert "Revisions 0–3 are the same; they first differ at <b>revision 4</b>" in page.text
    assert f'href="/sessions/{fork["sid"]}"' in page.text and 'id="verdict-b"' in page.text
    _error(client.get(f"/api/v1/compare?a={sid}"), 422, "BAD_INPUT", "b")
    _error(client.get(f"/api/v1/compare?a={sid}&b=nope"), 404, "UNKNOWN_SESSION")
    assert client.get("/compare?b=x").status_code == 422  # an error page, not a traceback


def test_the_session_page_and_the_report_link_both_ways(client: TestClient) -> None:
    sid = _finished(client)
    fork = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 3}).json()
    child = client.get(f"/sessions/{fork['sid']}").text
    assert re.search(rf'Forked from <a href="/sessions/{sid}"><code>{sid}</code></a>@3', child)
    assert f'href="/compare?a={sid}&amp;b={fork["sid"]}"' in child
    assert 'id="what-if-form"' in child and 'class="edge fork"' in child
    assert f"<td>forked from {sid}@3</td>" in child  # the timeline's row of its own revision
    parent = client.get(f"/sessions/{sid}").text
    assert f'<li data-fork-sid="{fork["sid"]}"><a href="/sessions/{fork["sid"]}">' in parent
    report = client.get(f"/api/v1/sessions/{fork['sid']}/report").text
    assert f"Forked from <code>{sid}</code>@3" in report and "/compare" not in report
    plain = client.get(f"/sessions/{_finished(client)}").text
    assert 'id="lineage"' not in plain  # neither a fork nor forked: no banner


def _rev(n: int, fsm: str, events: list[dict[str, Any]] | None = None) -> Revision:
    state = new_state("s", "c", fsm, {}, {})
    return Revision(sid="s", rev=n, parent_rev=n - 1 if n else None, fsm=fsm,
                    skill=None if events else "x", envelope=None, state=state,
                    ts="2026-11-25T00:00:00+00:00", events=events or [])


def test_the_diagram_counts_repeated_moves_and_draws_rewinds_and_forks() -> None:
    states = ["PARSE_CLAIM", "RETRIEVAL", *["RETRIEVAL"] * 4, "EXTRACT"]
    revs = [_rev(n, fsm) for n, fsm in enumerate(states)]
    revs.append(_rev(len(revs), "RETRIEVAL", [{"type": "Rewind", "to": 1}]))
    marks = history_marks(revs)
    assert marks.moves[("RETRIEVAL", "RETRIEVAL")] == 4
    assert ("EXTRACT", "RETRIEVAL") not in marks.moves  # a rewind is no machine move
    assert marks.rewinds == [("EXTRACT", "RETRIEVAL", 7)]
    svg = diagram_svg(DEFAULT_MACHINE, path=states, counts=marks.moves,
                      rewinds=marks.rewinds)
    assert re.search(r'data-count="RETRIEVAL->RETRIEVAL"[^>]*>x4</text>', svg)
    assert 'data-count="PARSE_CLAIM->RETRIEVAL"' not in svg  # taken once: no count
    assert 'data-rewind="EXTRACT->RETRIEVAL" data-rev="7"' in svg and "rewind @7" in svg
    forked = history_marks([*revs[:3], _rev(3, "RETRIEVAL", [{"type": "Forked"}])])
    assert forked.forked_at == "RETRIEVAL" and forked.moves[("RETRIEVAL", "RETRIEVAL")] == 1
    assert 'data-fork="RETRIEVAL"' in diagram_svg(DEFAULT_MACHINE, path=states,
                                                   forked_at=forked.forked_at)


def test_the_sessions_page_has_a_forked_from_column(client: TestClient) -> None:
    sid = _finished(client)
    fork = client.post(f"/api/v1/sessions/{sid}/fork", json={"at": 2}).json()
    html = client.get("/").text
    assert "<th>forked from</th>" in html
    rows = dict(re.findall(r'<tr class="session" data-sid="([^"]+)">(.*?)</tr>', html))
    link = re.search(r'<a class="forked-from" href="([^"]+)" title="forked at ([^"]+)">'
                     r"<code>([^<]+)</code></a>", rows[fork["sid"]])
    assert link is not None
    assert link.groups() == (f"/sessions/{sid}", fork["ts"], f"{sid}@2")
    assert "forked-from" not in rows[sid]
