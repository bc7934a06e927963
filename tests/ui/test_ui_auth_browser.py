"""Keys and roles in a real headless Chromium (the browser of test_ui_browser.py): an
unknown visitor is sent to the login form; a wrong key is refused there; a read key's
session page shows the Step and rollback buttons disabled and the server refuses the
step anyway (403 FORBIDDEN); logout ends the login; a write key steps from the page (its
requests carry the login's CSRF token) and the review form names it as the reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from claimfsm.state.keys import new_key
from tests.support.ui_helpers import make_service, serve
from tests.ui.test_ui_browser import browser, rows, shot, until  # noqa: F401

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], str, str]]:
    """A served store with a read and a write key, one started session and one waiting
    for review."""
    service = make_service(tmp_path / "auth.db")
    keys = {}
    for role in ("read", "write"):
        keys[role], row = new_key(f"k-{role}", role, now=datetime.now(UTC))
        service.engine.store.add_key(row)
    sid = service.start(CLAIM).sid
    waiting = service.run(service.start(CLAIM, {"review": "always"}).sid).sid
    from claimfsm.ui.app import create_app

    with serve(create_app(service, db_label="auth.db")) as url:
        yield url, keys, sid, waiting
    service.close()


def _login(driver: Any, key: str) -> None:
    from selenium.webdriver.common.by import By

    until(driver, lambda d: d.find_elements(By.ID, "login-form"))
    field = driver.find_element(By.NAME, "key")
    field.clear()
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "#login-form button").click()


def _post_step(driver: Any, sid: str) -> Any:
    # Through the page's own fetch (the one auth.js wraps), as the Step button would.
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/api/v1/sessions/' + arguments[0] + '/step', {method: 'POST',"
        " headers: {'content-type': 'application/json'}, body: '{}'})"
        ".then(async r => done([r.status, await r.json()]));", sid)


def test_login_a_forbidden_button_and_logout(browser: Any, site: Any,  # noqa: F811
                                             tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, keys, sid, waiting = site
    browser.get(f"{url}/sessions/{sid}")
    until(browser, lambda d: "/login?next=" in d.current_url)
    _login(browser, keys["read"] + "x")
    until(browser, lambda d: d.find_elements(By.ID, "login-error"))
    assert "AUTH_REQUIRED" in browser.find_element(By.ID, "login-error").text
    _login(browser, keys["read"])
    until(browser, lambda d: d.current_url == f"{url}/sessions/{sid}")
    assert browser.find_element(By.ID, "viewer").text == "k-read (read)"
    step = browser.find_element(By.ID, "step")
    until(browser, lambda d: d.find_element(By.ID, "step").get_attribute("disabled"))
    assert "write role" in (step.get_attribute("title") or "")
    assert browser.find_element(By.ID, "check").get_attribute("disabled") is None
    shot(browser, tmp_path, "auth-read")
    status, body = _post_step(browser, sid)
    assert status == 403 and body["error"]["code"] == "FORBIDDEN"
    assert rows(browser) == ["0"]
    cookies = {c["name"]: c for c in browser.get_cookies()}
    assert cookies["claimfsm_session"]["httpOnly"] is True
    assert cookies["claimfsm_session"]["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie") == ""

    browser.find_element(By.CSS_SELECTOR, "#logout button").click()
    until(browser, lambda d: d.current_url.endswith("/login"))
    browser.get(f"{url}/")
    until(browser, lambda d: "/login?next=" in d.current_url)

    _login(browser, keys["write"])
    until(browser, lambda d: d.current_url == f"{url}/")
    browser.get(f"{url}/sessions/{sid}")
    until(browser, lambda d: d.find_elements(By.ID, "step"))
    assert browser.find_element(By.ID, "step").get_attribute("disabled") is None
    browser.find_element(By.ID, "step").click()
    until(browser, lambda d: "step: PARSE_CLAIM" in d.find_element(By.ID, "msg").text)
    until(browser, lambda d: rows(d) == ["1", "0"] or rows(d) == ["0", "1"])
    shot(browser, tmp_path, "auth-write")
    # The review form's name is the key's: the actor the server records anyway.
    browser.get(f"{url}/sessions/{waiting}")
    until(browser, lambda d: d.find_elements(By.ID, "review-form"))
    actor = browser.find_element(By.CSS_SELECTOR, '#review-form input[name="actor"]')
    until(browser, lambda d: actor.get_attribute("value") == "k-write")
    assert actor.get_attribute("readonly") is not None
