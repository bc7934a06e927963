"""The reviewer's flow in a real headless Chromium (the browser of test_ui_browser.py):
from the navigation to the queue, open the oldest waiting session, override its verdict
(refused, naming the field, until a reason is given), see it DONE with the reviewer's
provenance; a page the CLI moved on from gets the conflict message; a page nobody is
typing in follows input given from the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from tests.support.ui_helpers import make_service, serve
from tests.ui.test_ui_browser import browser, rows, shot, until  # noqa: F401

CLAIMS = ("NASA landed on the Moon in 1969.", "Water boils at 100 degrees Celsius at sea level.",
          "Honey never spoils.")


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A served store with three sessions waiting in REVIEW (oldest first) and one
    finished without review: (url, db, waiting sids)."""
    db = tmp_path / "review.db"
    service = make_service(db)
    sids = [service.run(service.start(c, {"review": "always"}).sid).sid for c in CLAIMS]
    service.run(service.start("The Eiffel Tower is in Berlin.").sid)
    from claimfsm.ui.app import create_app

    with serve(create_app(service, db_label="review.db")) as url:
        yield url, db, sids
    service.close()


def _cli_input(db: Path, sid: str, payload: dict[str, Any], actor: str) -> None:
    result = CliRunner().invoke(main, ["input", sid, "--json", json.dumps(payload),
                                       "--actor", actor, "--db", str(db)])
    assert result.exit_code == 0, result.output


def _queued(driver: Any) -> list[str]:
    found: list[str] = driver.execute_script(
        "return Array.from(document.querySelectorAll('tr.waiting'), r => r.dataset.sid)")
    return found


def _text(driver: Any, element_id: str) -> str:
    found: str = driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e ? e.textContent : '';",
        element_id)
    return found


def test_reviewer_overrides_from_the_queue(browser: Any, queue: Any,  # noqa: F811
                                           tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _db, sids = queue
    browser.get(url + "/")
    browser.find_element(By.LINK_TEXT, "Review queue").click()
    until(browser, lambda d: _queued(d) == sids)
    shot(browser, tmp_path, "review-queue")
    browser.find_element(By.LINK_TEXT, sids[0]).click()
    until(browser, lambda d: d.find_elements(By.ID, "review-form"))
    assert _text(browser, "provenance") == "by engine"
    assert _text(browser, "head-fsm") == "REVIEW"
    form = browser.find_element(By.ID, "review-form")
    form.find_element(By.CSS_SELECTOR, 'input[value="override"]').click()
    Select(form.find_element(By.NAME, "verdict")).select_by_value("REFUTES")
    form.find_element(By.NAME, "actor").send_keys("ann")
    form.find_element(By.ID, "review-submit").click()
    # No reason: refused, naming the field; nothing committed.
    until(browser, lambda d: "BAD_INPUT" in _text(d, "review-msg"))
    assert "reason" in _text(browser, "review-msg")
    assert _text(browser, "head-fsm") == "REVIEW"
    form.find_element(By.NAME, "reason").send_keys("the landing site photos are staged")
    shot(browser, tmp_path, "review-form")
    form.find_element(By.ID, "review-submit").click()
    until(browser, lambda d: _text(d, "head-fsm") == "DONE")
    until(browser, lambda d: _text(d, "provenance").startswith("by reviewer:ann"))
    assert _text(browser, "verdict-label") == "REFUTES"
    assert _text(browser, "provenance") == "by reviewer:ann: the landing site photos are staged"
    assert not browser.find_elements(By.ID, "review-form")
    shot(browser, tmp_path, "reviewed")
    browser.get(url + "/review")
    until(browser, lambda d: _queued(d) == sids[1:])


def test_a_stale_page_gets_the_conflict_message(browser: Any, queue: Any,  # noqa: F811
                                                tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, db, sids = queue
    browser.get(f"{url}/sessions/{sids[1]}")
    until(browser, lambda d: d.find_elements(By.ID, "review-form"))
    head = len(rows(browser)) - 1
    form = browser.find_element(By.ID, "review-form")
    form.find_element(By.CSS_SELECTOR, 'input[value="override"]').click()
    form.find_element(By.NAME, "reason").send_keys("the boiling point depends on pressure")
    form.find_element(By.NAME, "actor").send_keys("ann")
    # Meanwhile somebody approves it from the CLI; the page redraws, keeping the form.
    _cli_input(db, sids[1], {"decision": "approve"}, "bob")
    until(browser, lambda d: _text(d, "head-fsm") == "DONE")
    assert "moved on" in _text(browser, "review-note")
    browser.find_element(By.ID, "review-submit").click()
    until(browser, lambda d: "REV_CONFLICT" in _text(d, "review-msg"))
    assert f"expected_rev is {head}" in _text(browser, "review-msg")
    shot(browser, tmp_path, "review-conflict")
    # Bob's approval stands, shown as his.
    browser.refresh()
    until(browser, lambda d: _text(d, "provenance") == "by reviewer:bob")
    assert not browser.find_elements(By.ID, "review-form")


def test_an_untouched_page_follows_input_from_the_cli(browser: Any,  # noqa: F811
                                                      queue: Any) -> None:
    from selenium.webdriver.common.by import By

    url, db, sids = queue
    browser.get(f"{url}/sessions/{sids[2]}")
    until(browser, lambda d: d.find_elements(By.ID, "review-form"))
    _cli_input(db, sids[2], {"decision": "override", "verdict": "DISPUTED",
                             "reason": "sources disagree"}, "carol")
    until(browser, lambda d: _text(d, "provenance") == "by reviewer:carol: sources disagree")
    assert _text(browser, "verdict-label") == "DISPUTED"
    assert not browser.find_elements(By.ID, "review-form")


def test_send_back_then_approve_from_the_form(browser: Any, queue: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    url, db, sids = queue
    browser.get(f"{url}/sessions/{sids[2]}")
    until(browser, lambda d: d.find_elements(By.ID, "review-form"))
    before = len(rows(browser))
    form = browser.find_element(By.ID, "review-form")
    form.find_element(By.CSS_SELECTOR, 'input[value="send_back"]').click()
    assert form.find_element(By.NAME, "queries").is_displayed()
    assert not form.find_element(By.NAME, "verdict").is_displayed()
    form.find_element(By.NAME, "queries").send_keys("honey archaeology\nhoney shelf life")
    form.find_element(By.NAME, "reason").send_keys("look for the tomb finds")
    form.find_element(By.NAME, "actor").send_keys("dan")
    form.find_element(By.ID, "review-submit").click()
    # Verified again and back in REVIEW: a new form at the new head, the name remembered.
    until(browser, lambda d: len(rows(d)) > before + 2 and _text(d, "head-fsm") == "REVIEW")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#review-form") and int(
        d.find_element(By.ID, "review-form").get_attribute("data-rev")) == len(rows(d)) - 1)
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.runtime import Engine

    with Engine.open(str(db), config=EngineConfig(seed=False, create=False)) as eng:
        sent = next(r for r in eng.store.history(sids[2])
                    if any(ev.get("type") == "InputReceived" for ev in r.events))
    event = next(ev for ev in sent.events if ev.get("type") == "InputReceived")
    assert event["actor"] == "dan"
    assert event["payload"] == {"decision": "send_back",
                                "queries": ["honey archaeology", "honey shelf life"],
                                "doc_ids": [], "reason": "look for the tomb finds"}
    form = browser.find_element(By.ID, "review-form")
    assert form.find_element(By.NAME, "actor").get_attribute("value") == "dan"
    form.find_element(By.ID, "review-submit").click()  # approve, the default
    until(browser, lambda d: _text(d, "provenance") == "by reviewer:dan")
    assert _text(browser, "head-fsm") == "DONE"
