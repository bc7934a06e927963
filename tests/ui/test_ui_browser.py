"""The inspector in a real headless Chromium (Debian's chromium and chromium-driver,
driven by selenium; nothing downloads a browser): every session operation of the CLI done
from the page, live updates from steps made elsewhere, replay, and the report opened from
disk. Each test saves a screenshot under its tmp dir (and, with CLAIMFSM_SCREENSHOTS=DIR,
into DIR for docs/ui.md: ``make docs``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import FIXTURES, Engine
from tests.replay.sealing import reseal
from tests.support.components import missing, need_module
from tests.support.ui_helpers import make_service, serve

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
WAIT = 15


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        missing("browser", "Debian's chromium and chromium-driver are not installed")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service as DriverService
    except ImportError:
        missing("browser", "selenium is not installed (the dev extra)")
    need_module("uvicorn", "ui")
    os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch a driver
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1300",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A served store with finished demo sessions (supported, refuted, not enough
    info, failed) and one mid-way: (url, db, sids)."""
    db = tmp_path / "ui.db"
    service = make_service(db)
    sids = []
    for claim in ("NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin.",
                  "Honey never spoils.", "?!"):
        sids.append(service.run(service.start(claim).sid).sid)  # the last one FAILS
    midway = service.start("Water boils at 100 degrees Celsius at sea level.").sid
    service.step(midway)
    sids.append(midway)
    from claimfsm.ui.app import create_app

    with serve(create_app(service, db_label="ui.db")) as url:
        yield url, db, sids
    service.close()


def shot(browser: Any, tmp_path: Path, name: str) -> None:
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(tmp_path / f"{name}.png"))
    where = os.environ.get("CLAIMFSM_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(where) / f"{name}.png"))


def until(browser: Any, check: Any) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # The live page swaps its panels as revisions land: an element found a moment ago
    # may be gone, which only means "look again".
    return WebDriverWait(browser, WAIT, ignored_exceptions=(
        StaleElementReferenceException,)).until(lambda d: check(d))


def rows(browser: Any) -> list[str]:
    """The timeline's revision numbers, read in one script call (never a stale element)."""
    found: list[str] = browser.execute_script(
        "return Array.from(document.querySelectorAll('tr.rev'), r => r.dataset.rev)")
    return found


def test_sessions_page_and_a_session(browser: Any, site: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, _db, sids = site
    browser.get(url + "/")
    listed = [r.get_attribute("data-sid") for r in
              browser.find_elements(By.CSS_SELECTOR, "tr.session")]
    assert listed == sids[::-1]
    shot(browser, tmp_path, "sessions")
    browser.find_element(By.LINK_TEXT, sids[0]).click()
    until(browser, lambda d: d.find_elements(By.ID, "timeline"))
    current = browser.find_element(By.CSS_SELECTOR, "svg g.current")
    assert current.get_attribute("data-state") == "DONE"
    assert browser.find_elements(By.CSS_SELECTOR, "path.edge.taken")
    with Engine.open(str(_db), config=EngineConfig(seed=False, create=False)) as eng:
        assert len(rows(browser)) == eng.store.head(sids[0]).rev + 1
    assert browser.find_element(By.ID, "verdict-label").text == "SUPPORTS"
    assert browser.find_elements(By.CSS_SELECTOR, ".evidence mark")
    browser.find_element(By.CSS_SELECTOR, 'tr.rev[data-rev="3"] td').click()
    until(browser, lambda d: d.find_elements(By.ID, "detail-state"))
    assert '"fsm": "RETRIEVAL"' in browser.find_element(By.ID, "detail-state").text
    first = browser.find_element(By.CSS_SELECTOR, "#diff input[name=a]")
    first.clear()
    first.send_keys("0")
    browser.find_element(By.CSS_SELECTOR, "#diff button").click()
    until(browser, lambda d: d.find_elements(By.ID, "diff-table"))
    assert "state.verdict" in browser.find_element(By.ID, "diff-table").text
    browser.find_element(By.ID, "check").click()
    until(browser, lambda d: "chain ok" in d.find_element(By.ID, "msg").text)
    exported = browser.execute_async_script(
        "const done = arguments[0];"
        "fetch(document.getElementById('export').href).then(r => r.text()).then(done);")
    assert f'"sid":"{sids[0]}"' in exported.splitlines()[0]
    shot(browser, tmp_path, "session")


def test_start_step_run_from_the_page(browser: Any, site: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, _db, _sids = site
    browser.get(url + "/")
    browser.find_element(By.CSS_SELECTOR, "#start input[name=claim]").send_keys(
        "Water boils at 100 degrees Celsius at sea level.")
    browser.find_element(By.CSS_SELECTOR, "#start button").click()
    until(browser, lambda d: d.find_elements(By.ID, "timeline"))
    assert rows(browser) == ["0"]
    browser.find_element(By.ID, "step").click()
    until(browser, lambda d: rows(d) == ["0", "1"])
    until(browser, lambda d: "PARSE_CLAIM → RETRIEVAL" in d.find_element(By.ID, "rev-1").text)
    browser.find_element(By.ID, "run").click()
    until(browser, lambda d: d.find_element(By.ID, "head-fsm").text == "DONE")
    until(browser, lambda d: d.find_element(By.ID, "verdict-label").text)
    shot(browser, tmp_path, "driven")


def test_rollback_and_fork_from_the_page(browser: Any, site: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, _db, sids = site
    browser.get(f"{url}/sessions/{sids[1]}")
    before = rows(browser)
    browser.find_element(By.CSS_SELECTOR, 'button[data-rollback="1"]').click()
    until(browser, lambda d: len(rows(d)) == len(before) + 1)
    until(browser, lambda d: "rewind to 1" in d.find_element(By.ID, f"rev-{len(before)}").text)
    until(browser, lambda d: d.find_element(By.ID, "head-fsm").text == "RETRIEVAL")
    assert "rolled back" in browser.find_element(By.ID, "msg").text
    browser.find_element(By.CSS_SELECTOR, 'button[data-fork="2"]').click()
    # The fork: revisions 0..2 copied, then its own revision 3 naming its parent.
    until(browser, lambda d: sids[1] not in d.current_url and rows(d) == ["0", "1", "2", "3"])
    assert f"Forked from {sids[1]}@2" in browser.find_element(By.ID, "forked-from").text
    shot(browser, tmp_path, "forked")


def test_page_follows_steps_made_from_the_cli(browser: Any, site: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, db, _sids = site
    with Engine.open(str(db), config=EngineConfig(seed=False, create=False)) as eng:
        sid = eng.start("The Moon orbits the Earth.").sid
        browser.get(f"{url}/sessions/{sid}")
        until(browser, lambda d: rows(d) == ["0"])
        eng.driver.step(sid)
        eng.driver.step(sid)
    until(browser, lambda d: rows(d) == ["0", "1", "2"])
    until(browser, lambda d: d.find_element(By.ID, "head-fsm").text == "RETRIEVAL")
    shot(browser, tmp_path, "live")


def test_replay_from_the_page(browser: Any, site: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, _db, _sids = site
    browser.get(url + "/replay")
    Select(browser.find_element(By.NAME, "name")).select_by_value("rollback_state.jsonl")
    browser.find_element(By.CSS_SELECTOR, "#replay-form button").click()
    until(browser, lambda d: d.find_elements(By.ID, "replay-status"))
    assert "replayed clean" in browser.find_element(By.ID, "replay-status").text
    lines = (FIXTURES / "sessions" / "supported.jsonl").read_bytes().splitlines()
    lines[3] = reseal(lines[3].replace(b'"s":"ok"', b'"s":"retry"', 1))  # a changed engine
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"\n".join(lines) + b"\n")
    browser.find_element(By.NAME, "file").send_keys(str(tampered))
    browser.find_element(By.CSS_SELECTOR, "#replay-form button").click()
    until(browser, lambda d: d.find_elements(By.ID, "divergence"))
    assert browser.find_element(By.CSS_SELECTOR, "tr.diverged").get_attribute("data-line") == "4"
    assert browser.find_element(By.ID, "hit").text == '"retry"'
    shot(browser, tmp_path, "replay")


def test_report_opens_from_disk(browser: Any, site: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner
    from selenium.webdriver.common.by import By

    from claimfsm.cli.main import main

    _url, db, sids = site
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", sids[0], "--db", str(db), "--html", str(out)])
    assert result.exit_code == 0, result.output
    browser.get(out.as_uri())
    assert browser.find_element(By.CSS_SELECTOR, "svg g.current").get_attribute(
        "data-state") == "DONE"
    assert browser.find_element(By.ID, "verdict-label").text == "SUPPORTS"
    details = browser.find_elements(By.CSS_SELECTOR, "details[id^=revision-]")
    assert len(details) == len(rows(browser)) > 5
    shot(browser, tmp_path, "report")
