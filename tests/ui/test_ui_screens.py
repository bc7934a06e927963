"""The session page for the people who check claims, in a real headless Chromium at a
phone's 390x844 and a desktop's 1400x1000 (and 1920 wide): the judge's doubts as warnings
beside the verdict, each sentence's stance and labelled scores, weak evidence folded, the
engine's terms one click away; a page that stays true (the diff pickers follow new
revisions, the diff fits its card, revision details open in view, the replay shows the
diverging value, Step and Run disabled on a finished session with the reason on hover,
relative times, clickable states filtering the timeline); no page-level horizontal
overflow, keyboard focus visible. Screenshots go to docs/ui/ with CLAIMFSM_SCREENSHOTS
(``make docs``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import FIXTURES, Engine
from tests.replay.sealing import reseal
from tests.support.ui_helpers import serve
from tests.ui.test_ui_browser import browser, rows, until

__all__ = ["browser"]  # the module's Chromium, shared with test_ui_browser's fixture

SIZES = {"narrow": (390, 844), "wide": (1400, 1000)}
CANBERRA = "Canberra became the capital of Australia in 1850."


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """``claimfsm demo``'s store, served, with the Canberra claim verified on it and one
    session left at revision 0: (url, db, {"canberra": sid, "fresh": sid})."""
    from click.testing import CliRunner

    from claimfsm.cli.main import main
    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service

    db = tmp_path_factory.mktemp("demo") / "demo.db"
    result = CliRunner().invoke(main, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    service = Service.open(str(db))
    sids = {"canberra": service.run(service.start(CANBERRA).sid).sid,
            "nasa": service.run(service.start("NASA landed on the Moon in 1969.").sid).sid,
            "waiting": service.run(service.start("Sydney is the capital of Australia.",
                                                 {"review": "always"}).sid).sid}
    with serve(create_app(service, db_label="demo.db")) as url:
        yield url, db, sids
    service.close()


def sized(browser: Any, size: str) -> None:
    browser.set_window_size(*SIZES[size])
    assert browser.execute_script("return innerWidth") == SIZES[size][0]


def shot(browser: Any, tmp_path: Path, name: str) -> None:
    """The whole page (the window grown to its height for the picture, then restored)."""
    width, height = browser.execute_script("return [innerWidth, innerHeight]")
    full = browser.execute_script("return document.scrollingElement.scrollHeight")
    browser.set_window_size(width, min(full, 4000))
    browser.save_screenshot(str(tmp_path / f"{name}.png"))
    where = os.environ.get("CLAIMFSM_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(where) / f"{name}.png"))
    browser.set_window_size(width, height)


def no_overflow(browser: Any) -> None:
    width, inner = browser.execute_script(
        "return [document.scrollingElement.scrollWidth, innerWidth]")
    assert width <= inner, f"the page is {width} px wide in a {inner} px window"


def in_view(browser: Any, element_id: str) -> bool:
    found: bool = browser.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return r.top >= 0 && r.top < innerHeight && r.bottom > 0;", element_id)
    return found


@pytest.mark.parametrize("size", SIZES)
def test_a_doubted_verdict_reads_as_a_warning(browser: Any, demo: Any, tmp_path: Path,
                                              size: str) -> None:
    from selenium.webdriver.common.by import By

    url, _db, sids = demo
    sized(browser, size)
    browser.get(f"{url}/sessions/{sids['canberra']}")
    until(browser, lambda d: d.find_elements(By.ID, "verdict-label"))
    warning = browser.find_element(By.ID, "warnings")
    assert warning.is_displayed() and warning.get_attribute("role") == "alert"
    # Not colour alone: a sign and the word, and the doubt in plain words.
    assert "⚠" in warning.text and "Warning (s1)" in warning.text
    assert "number of the claim is not confirmed by the evidence: 1850" in warning.text
    assert browser.find_element(By.CSS_SELECTOR, ".badge.doubt").text == "⚠ with doubts"
    # The verdict card holds the warning, right under the label.
    assert browser.execute_script(
        "return document.getElementById('verdict').contains(arguments[0])", warning)
    shown = [m for m in browser.find_elements(By.CSS_SELECTOR, "#verdict .ev")
             if m.is_displayed()]
    assert shown
    for ev in shown:
        meta = ev.find_element(By.CSS_SELECTOR, ".ev-meta").text
        assert re.search(r"stance: (supports|refutes|not enough info) \d\.\d\d", meta), meta
        relevance = float(re.search(r"relevance (\d\.\d\d)", meta)[1])  # type: ignore[index]
        assert relevance >= 0.40 or "cited" in meta
    folded = browser.find_element(By.CSS_SELECTOR, "details.below-floor")
    assert folded.get_attribute("open") is None
    assert "below the relevance floor (0.40)" in folded.text
    hidden = folded.find_elements(By.CSS_SELECTOR, ".ev")
    assert hidden and not any(h.is_displayed() for h in hidden)
    no_overflow(browser)
    shot(browser, tmp_path, f"verdict-doubts-{size}")
    # The engine's terms are one click away, not on the page.
    text = browser.find_element(By.ID, "verdict").text
    assert "rb=" not in text and "warning: s1" not in text and "key terms" not in text
    terms = browser.find_element(By.CSS_SELECTOR, "#engine-terms summary")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", terms)
    terms.click()
    raw = browser.find_element(By.ID, "engine-terms").text
    assert "rb=state" in raw and "warning: s1: number not confirmed: 1850" in raw


@pytest.mark.parametrize("size", SIZES)
def test_a_supported_claim_shows_its_cited_sentence(browser: Any, demo: Any, size: str) -> None:
    from selenium.webdriver.common.by import By

    url, _db, sids = demo
    sized(browser, size)
    browser.get(f"{url}/sessions/{sids['nasa']}")
    until(browser, lambda d: d.find_elements(By.ID, "verdict-label"))
    assert browser.find_element(By.ID, "verdict-label").text == "SUPPORTS"
    cited = browser.find_element(By.CSS_SELECTOR, "#verdict .ev")  # cited ones come first
    assert "cited" in cited.text and "stance: supports" in cited.text
    assert not browser.find_elements(By.ID, "warnings")


@pytest.mark.parametrize("size", SIZES)
def test_actions_that_cannot_apply_are_disabled(browser: Any, demo: Any, size: str) -> None:
    from selenium.webdriver.common.by import By

    url, db, sids = demo
    sized(browser, size)
    browser.get(f"{url}/sessions/{sids['canberra']}")
    for ident in ("step", "run"):
        button = browser.find_element(By.ID, ident)
        assert not button.is_enabled()
        assert "DONE: nothing is left to run" in button.get_attribute("title")
    browser.execute_script("document.getElementById('step').click()")
    assert browser.find_element(By.ID, "msg").text == ""  # no request, so no red 409
    browser.get(f"{url}/sessions/{sids['waiting']}")
    step = browser.find_element(By.ID, "step")
    assert not step.is_enabled()
    assert "waits for input (ReviewInput) in REVIEW" in step.get_attribute("title")
    with Engine.open(str(db), config=EngineConfig(seed=False, create=False)) as eng:
        sid = eng.start("Honey never spoils.").sid
    browser.get(f"{url}/sessions/{sid}")
    run = browser.find_element(By.ID, "run")
    assert run.is_enabled() and not run.get_attribute("title")
    browser.execute_script("arguments[0].click()", run)
    until(browser, lambda d: d.find_element(By.ID, "head-fsm").text == "DONE")
    until(browser, lambda d: not d.find_element(By.ID, "step").is_enabled())
    assert "nothing is left to run" in browser.find_element(By.ID, "run").get_attribute("title")


@pytest.mark.parametrize("size", SIZES)
def test_the_page_stays_true_as_revisions_land(browser: Any, demo: Any, tmp_path: Path,
                                               size: str) -> None:
    from selenium.webdriver.common.by import By

    url, db, _sids = demo
    sized(browser, size)
    with Engine.open(str(db), config=EngineConfig(seed=False, create=False)) as eng:
        # This claim's revisions carry long unbroken JSON values (lists of doc ids),
        # the kind that stretched the diff table past its card.
        sid = eng.start(CANBERRA).sid
        browser.get(f"{url}/sessions/{sid}")
        until(browser, lambda d: rows(d) == ["0"])
        picker = browser.find_element(By.CSS_SELECTOR, "#diff input[name=b]")
        assert picker.get_attribute("value") == "0"
        head = eng.driver.run(sid)
    until(browser, lambda d: len(rows(d)) == head.rev + 1)
    # The pickers outside the refreshed panels follow: the newest revision, and its bound.
    until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#diff input[name=b]")
          .get_attribute("value") == str(head.rev))
    assert picker.get_attribute("max") == str(head.rev)
    assert browser.find_element(By.CSS_SELECTOR, "#diff input[name=a]").get_attribute(
        "value") == "0"
    # Relative times, the exact one on hover.
    stamp = browser.find_element(By.CSS_SELECTOR, "#timeline time")
    assert re.fullmatch(r"just now|\d+ s ago|\d+ min ago", stamp.text), stamp.text
    assert stamp.get_attribute("title") == stamp.get_attribute("datetime")
    assert "T" in stamp.get_attribute("title")
    # A diff of the whole session fits its card: long values wrap inside it.
    browser.find_element(By.CSS_SELECTOR, "#diff button").click()
    until(browser, lambda d: d.find_elements(By.ID, "diff-table"))
    table, card = browser.execute_script(
        "return [document.getElementById('diff-table').getBoundingClientRect().width,"
        " document.getElementById('diff-card').getBoundingClientRect().width]")
    assert 0 < table <= card
    no_overflow(browser)
    # Revision details open where the reader is looking.
    browser.execute_script("window.scrollTo(0, 0)")
    row = browser.find_element(By.ID, "rev-2")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.find_element(By.CSS_SELECTOR, "td").click()
    until(browser, lambda d: d.find_elements(By.ID, "detail-state"))
    until(browser, lambda d: in_view(d, "detail"))
    assert browser.execute_script("return document.activeElement.id") == "detail"
    # Step durations and tool calls grouped per tool.
    verify = browser.find_element(By.CSS_SELECTOR, 'tr.rev[data-fsm="VERIFY"]').text
    assert re.search(r"\d+(\.\d)? (ms|s)", verify)
    assert re.search(r"page_fetch ×\d+ · (\d+ ms|each under 1 ms)", verify), verify
    if size == "narrow":  # the wide page is test_ui_browser's session.png
        shot(browser, tmp_path, "session-narrow")


@pytest.mark.parametrize("size", SIZES)
def test_a_state_filters_the_timeline(browser: Any, demo: Any, size: str) -> None:
    from selenium.webdriver.common.by import By

    url, _db, sids = demo
    sized(browser, size)
    browser.get(f"{url}/sessions/{sids['canberra']}")
    until(browser, lambda d: len(rows(d)) > 5)
    # At 390 px the vertical list is the diagram to use; wide, the SVG's states.
    target = ('#diagram button.flow-state[data-state="RETRIEVAL"]' if size == "narrow"
              else '#diagram svg g[data-state="RETRIEVAL"]')
    state = browser.find_element(By.CSS_SELECTOR, target)
    assert state.is_displayed()
    # The SVG's state names stay readable at any width (it scrolls in its card instead
    # of shrinking): the 12 px labels are drawn at least 10 px tall.
    label = browser.execute_script(
        "return document.querySelector('#diagram svg g[data-state] text')"
        ".getBoundingClientRect().height")
    assert label >= 10, label
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", state)
    state.click()
    visible = browser.execute_script(
        "return Array.from(document.querySelectorAll('tr.rev'))"
        ".filter(r => !r.hidden).map(r => r.dataset.fsm)")
    assert visible and set(visible) == {"RETRIEVAL"} and len(visible) < len(rows(browser))
    assert "Showing the" in browser.find_element(By.ID, "filter").text
    browser.find_element(By.ID, "show-all").click()
    assert browser.execute_script(
        "return Array.from(document.querySelectorAll('tr.rev')).every(r => !r.hidden)")


@pytest.mark.parametrize("size", SIZES)
def test_the_replay_scrolls_to_the_diverging_value(browser: Any, demo: Any, tmp_path: Path,
                                                   size: str) -> None:
    from selenium.webdriver.common.by import By

    url, _db, _sids = demo
    sized(browser, size)
    lines = (FIXTURES / "sessions" / "supported.jsonl").read_bytes().splitlines()
    # A late line with a long state: the diverging value sits deep in its scroll box.
    last = len(lines) - 2
    lines[last] = reseal(lines[last].replace(b'"s":"ok"', b'"s":"retry"', 1))
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"\n".join(lines) + b"\n")
    browser.get(url + "/replay")
    browser.find_element(By.NAME, "file").send_keys(str(tampered))
    browser.find_element(By.CSS_SELECTOR, "#replay-form button").click()
    until(browser, lambda d: d.find_elements(By.ID, "hit"))
    inside, shown = browser.execute_script(
        "const h = document.getElementById('hit').getBoundingClientRect();"
        "const box = document.querySelector('#divergence pre').getBoundingClientRect();"
        "return [h.top >= box.top && h.bottom <= box.bottom,"
        " h.top >= 0 && h.bottom <= innerHeight]")
    assert inside and shown
    no_overflow(browser)


@pytest.mark.parametrize("width", [390, 1400, 1920])
def test_no_page_overflows_and_focus_is_visible(browser: Any, demo: Any, tmp_path: Path,
                                                width: int) -> None:
    from click.testing import CliRunner
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from claimfsm.cli.main import main

    url, db, sids = demo
    browser.set_window_size(width, 900)
    for path in ("/", f"/sessions/{sids['canberra']}", f"/sessions/{sids['waiting']}",
                 "/review", "/replay"):
        browser.get(url + path)
        no_overflow(browser)
    assert browser.execute_script("return document.title").startswith("Replay")
    browser.get(url + "/")
    stamp = browser.find_element(By.CSS_SELECTOR, "#sessions time")
    assert re.fullmatch(r"just now|\d+ (s|min|h|d) ago", stamp.text), stamp.text
    assert stamp.get_attribute("title") == stamp.get_attribute("datetime")
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", sids["canberra"], "--db", str(db),
                                       "--html", str(report)])
    assert result.exit_code == 0, result.output
    browser.get(report.as_uri())
    assert "Warning (s1)" in browser.find_element(By.ID, "warnings").text
    no_overflow(browser)
    browser.get(f"{url}/sessions/{sids['canberra']}")
    # Keyboard only: Tab reaches the controls, each focused one shows an outline, and
    # Enter on a timeline row opens its revision.
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    outlines = []
    for _ in range(12):
        outlines.append(browser.execute_script(
            "const a = document.activeElement; const s = getComputedStyle(a);"
            "return [a.tagName, s.outlineStyle, parseFloat(s.outlineWidth)]"))
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert all(style != "none" and w >= 2 for _tag, style, w in outlines), outlines
    row = browser.find_element(By.ID, "rev-1")
    browser.execute_script("arguments[0].focus()", row)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    until(browser, lambda d: d.find_elements(By.ID, "detail-state"))
