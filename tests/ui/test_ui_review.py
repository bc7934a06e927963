"""The review queue page and the review form over plain HTTP: the queue lists the waiting
sessions oldest first and filters them by state, verdict and age, pages by key, refuses a
bad filter with a field-named BAD_INPUT; the session page of a session waiting in REVIEW
carries the form with the page's revision, and the verdict says who decided."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.components import need_module

need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from claimfsm.engine.config import EngineConfig  # noqa: E402
from claimfsm.skills.context import FixedClock  # noqa: E402
from claimfsm.ui.app import create_app  # noqa: E402
from claimfsm.ui.service import Service  # noqa: E402

MOON, TOWER = "NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin."


def _start(service: Service, claim: str, **options: Any) -> str:
    return service.start(claim, options).sid


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[TestClient, Service, FixedClock, dict[str, str]]]:
    """Sessions made over three days: waiting in REVIEW (SUPPORTS, REFUTES), paused
    before VERIFY, running, and finished; the clock then stands a day after the last."""
    clock = FixedClock(tick=timedelta(milliseconds=1))
    service = Service.open(str(tmp_path / "ui.db"), config=EngineConfig(clock=clock))
    sids: dict[str, str] = {}
    sids["moon"] = _start(service, MOON, review="always")
    service.run(sids["moon"])
    clock.advance(timedelta(days=1))
    sids["paused"] = _start(service, MOON, pause_before=["VERIFY"])
    service.run(sids["paused"])
    sids["running"] = _start(service, MOON)
    sids["done"] = _start(service, MOON)
    service.run(sids["done"])
    clock.advance(timedelta(days=1))
    sids["tower"] = _start(service, TOWER, review="always")
    service.run(sids["tower"])
    clock.advance(timedelta(hours=2))
    try:
        with TestClient(create_app(service)) as client:
            yield client, service, clock, sids
    finally:
        service.close()


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="waiting" data-sid="([^"]+)"', html)


def _get(client: TestClient, **params: Any) -> str:
    r = client.get("/review", params=params)
    assert r.status_code == 200, r.text
    return r.text


def test_the_queue_lists_waiting_sessions_oldest_first(site: Any) -> None:
    client, service, _, sids = site
    assert service.head(sids["moon"]).fsm == "REVIEW"
    assert service.head(sids["paused"]).fsm == "VERIFY"
    html = _get(client)
    assert _rows(html) == [sids["moon"], sids["paused"], sids["tower"]]
    assert "input (ReviewInput)" in html and "resume (paused)" in html
    assert 'href="/review"' in html  # the navigation links the queue
    assert 'href="/review"' in client.get("/").text


def test_the_queue_filters_by_state_verdict_and_age(site: Any) -> None:
    client, service, _, sids = site
    moon = service.head(sids["moon"]).state.verdict["label"]
    tower = service.head(sids["tower"]).state.verdict["label"]
    assert moon == "SUPPORTS" and tower != moon
    assert _rows(_get(client, fsm="REVIEW")) == [sids["moon"], sids["tower"]]
    assert _rows(_get(client, fsm="VERIFY")) == [sids["paused"]]
    assert _rows(_get(client, fsm="DONE")) == []
    assert _rows(_get(client, verdict=tower)) == [sids["tower"]]
    assert _rows(_get(client, verdict="SUPPORTS")) == [sids["moon"]]
    assert _rows(_get(client, verdict="none")) == [sids["paused"]]
    # The clock stands 2 h after the tower's wait began, a day more after the paused one.
    assert _rows(_get(client, age="1h")) == [sids["moon"], sids["paused"], sids["tower"]]
    assert _rows(_get(client, age="3h")) == [sids["moon"], sids["paused"]]
    assert _rows(_get(client, age="1d")) == [sids["moon"], sids["paused"]]
    assert _rows(_get(client, age="2d")) == [sids["moon"]]
    assert _rows(_get(client, age="1w")) == []
    assert _rows(_get(client, fsm="REVIEW", age="1d")) == [sids["moon"]]
    html = _get(client, fsm="REVIEW", verdict=tower, age="1h")
    assert _rows(html) == [sids["tower"]]
    assert f'<option value="{tower}" selected>' in html and '<option value="1h" selected>' in html


def test_the_queue_pages_by_key_with_the_filters_kept(site: Any) -> None:
    client, _, _, sids = site
    first = _get(client, limit=1, fsm="REVIEW")
    assert _rows(first) == [sids["moon"]]
    link = re.search(r'id="next" href="([^"]+)"', first)
    assert link is not None and "fsm=REVIEW" in link.group(1)
    second = client.get(link.group(1).replace("&amp;", "&")).text
    assert _rows(second) == [sids["tower"]]
    assert 'id="next"' not in second


@pytest.mark.parametrize(("params", "field"), [
    ({"age": "soon"}, "age"), ({"age": "0h"}, "age"), ({"after": "nope"}, "after"),
    ({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"), ({"fsm": "X" * 65}, "fsm"),
])
def test_a_bad_filter_is_a_field_named_bad_input(site: Any, params: dict[str, str],
                                                 field: str) -> None:
    client = site[0]
    r = client.get("/review", params=params)
    assert r.status_code == 422
    assert "BAD_INPUT" in r.text and f"{field}:" in r.text and "Traceback" not in r.text


def test_the_queue_follows_input_given_elsewhere(site: Any) -> None:
    client, service, _, sids = site
    rev = service.head(sids["moon"]).rev
    r = client.post(f"/api/v1/sessions/{sids['moon']}/input",
                    json={"input": {"decision": "approve"}, "expected_rev": rev,
                          "actor": "ann"})
    assert r.status_code == 200, r.text
    assert _rows(_get(client)) == [sids["paused"], sids["tower"]]


def test_the_session_page_has_the_review_form_at_its_revision(site: Any) -> None:
    client, service, _, sids = site
    head = service.head(sids["tower"])
    html = client.get(f"/sessions/{sids['tower']}").text
    form = re.search(r'<form id="review-form"[^>]*data-rev="(\d+)"', html)
    assert form is not None and int(form.group(1)) == head.rev
    for value in ("approve", "override", "send_back"):
        assert f'name="decision" value="{value}"' in html
    assert 'name="reason"' in html and 'name="queries"' in html and 'name="doc_ids"' in html
    assert '<span id="provenance">by engine</span>' in html
    # The fragment the page redraws carries the form too, and a session that does not
    # wait in REVIEW has an empty slot.
    assert 'id="review-form"' in client.get(f"/sessions/{sids['tower']}/panels").text
    for other in ("paused", "running", "done"):
        page = client.get(f"/sessions/{sids[other]}").text
        assert '<div id="review-slot"></div>' in page and 'id="review-form"' not in page


def test_the_verdict_says_which_reviewer_decided_and_why(site: Any) -> None:
    client, service, _, sids = site
    sid = sids["tower"]
    r = client.post(f"/api/v1/sessions/{sid}/input", json={
        "input": {"decision": "override", "verdict": "REFUTES",
                  "reason": "the index has no source for Berlin"},
        "expected_rev": service.head(sid).rev, "actor": "ann"})
    assert r.status_code == 200, r.text
    html = client.get(f"/sessions/{sid}/panels").text
    assert 'id="verdict-label">REFUTES<' in html
    assert ('<span id="provenance">by reviewer:ann: the index has no source for Berlin'
            '</span>') in html
    assert 'id="review-form"' not in html
    report = client.get(f"/api/v1/sessions/{sid}/report").text
    assert '<span id="provenance">by reviewer:ann: the index' in report
