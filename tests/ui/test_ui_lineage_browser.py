"""Lineage, what-if forks and the comparison page in headless Chromium, at 390x844 (a
phone) and 1400x1000: "forked from" and "forks" link both ways, the diagram draws the
rewind and the fork, a what-if fork with the learned judge is made from the page's form
and runs to its end, and the comparison page shows both verdicts and where the sessions
first differ, inside the window. Screenshots as tests/ui/test_ui_browser.py saves them
(``make docs`` puts them in docs/ui/)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.stance_data import write_dataset
from tests.support.ui_helpers import make_service, serve
from tests.ui.test_ui_browser import browser, rows, until

__all__ = ["browser"]  # the fixture, shared with the other browser tests

SIZES = [(390, 844), (1400, 1000)]
# Resolved now: a test below changes the working folder.
SHOTS = Path(os.environ["CLAIMFSM_SCREENSHOTS"]).resolve() if os.environ.get(
    "CLAIMFSM_SCREENSHOTS") else None
CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from claimfsm.eval.data import read_dataset
    from claimfsm.eval.train.judge import train

    root = tmp_path_factory.mktemp("model")
    train(read_dataset(write_dataset(root / "train.jsonl")), root / "m.npz", folds=4)
    return root / "m.npz"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Any, str]]:
    """A served store with one finished session, rewound and run again: (url, service,
    sid)."""
    service = make_service(tmp_path / "lineage.db")
    sid = service.run(service.start(CLAIM).sid).sid
    service.rollback(sid, 2)
    service.run(sid)
    from claimfsm.ui.app import create_app

    with serve(create_app(service, db_label="lineage.db")) as url:
        yield url, service, sid
    service.close()


def shot(browser: Any, tmp_path: Path, name: str, css: str | None = None) -> None:
    """A screenshot under ``tmp_path`` (and docs/ui with ``make docs``): the top of the
    page, or the element ``css`` scrolled into view."""
    script = ("window.scrollTo(0, 0)" if css is None else
              f"document.querySelector({css!r}).scrollIntoView({{block: 'start'}})")
    browser.execute_script(script)
    browser.save_screenshot(str(tmp_path / f"{name}.png"))
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SHOTS / f"{name}.png"))


def _size(browser: Any, size: tuple[int, int]) -> str:
    browser.set_window_size(*size)
    return "phone" if size[0] < 500 else "desktop"


def _inside(browser: Any, css: str) -> bool:
    """Every element matching ``css`` ends within the window's width (nothing cut)."""
    return bool(browser.execute_script(
        "const w = document.documentElement.clientWidth;"
        f"const els = Array.from(document.querySelectorAll({css!r}));"
        "return els.length > 0 && els.every(el => el.getBoundingClientRect().right <= w + 1);"))


@pytest.mark.parametrize("size", SIZES, ids=["390x844", "1400x1000"])
def test_forked_from_and_forks_link_both_ways(browser: Any, site: Any, tmp_path: Path,
                                              size: tuple[int, int]) -> None:
    from selenium.webdriver.common.by import By

    kind = _size(browser, size)
    url, service, sid = site
    fork = service.fork(sid, 3)
    browser.get(f"{url}/sessions/{sid}")
    # The parent: its rewind drawn as such, its fork listed and linked.
    rewind = browser.find_element(By.CSS_SELECTOR, "#diagram path.edge.rewind")
    rewound = next(r.rev for r in service.history(sid) if r.skill == "rewind")
    assert rewind.get_attribute("data-rev") == str(rewound)
    link = browser.find_element(By.CSS_SELECTOR, f'#forks li[data-fork-sid="{fork.sid}"] a')
    assert _inside(browser, "#lineage")
    shot(browser, tmp_path, f"lineage-parent-{kind}", "#lineage" if kind == "phone" else None)
    link.click()
    until(browser, lambda d: fork.sid in d.current_url and rows(d)[-1] == str(fork.rev))
    banner = browser.find_element(By.ID, "forked-from")
    assert banner.text.startswith(f"Forked from {sid}@3")
    assert browser.find_elements(By.CSS_SELECTOR, "#diagram path.edge.fork")
    assert _inside(browser, "#forked-from")
    shot(browser, tmp_path, f"lineage-fork-{kind}")
    banner.find_element(By.CSS_SELECTOR, "a[href^='/sessions/']").click()
    until(browser, lambda d: d.current_url.endswith(f"/sessions/{sid}"))
    assert browser.find_element(By.CSS_SELECTOR, f'#forks li[data-fork-sid="{fork.sid}"]')


@pytest.mark.parametrize("size", SIZES, ids=["390x844", "1400x1000"])
def test_a_what_if_fork_with_the_learned_judge_and_the_comparison(
        browser: Any, site: Any, tmp_path: Path, model_path: Path,
        size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    kind = _size(browser, size)
    url, service, sid = site
    hist = service.history(sid)
    # Offered by default: the last revision that entered VERIFY (after the rewind).
    verify_at = [r.rev for p, r in itertools.pairwise(hist)
                 if r.fsm == "VERIFY" and p.fsm != "VERIFY"][-1]
    browser.get(f"{url}/sessions/{sid}")
    form = browser.find_element(By.ID, "what-if-form")
    assert form.find_element(By.NAME, "at").get_attribute("value") == str(verify_at)
    Select(form.find_element(By.NAME, "judge")).select_by_value("learned")
    # A relative model file (the server runs in this process, from this folder): the
    # screenshots show no path of the machine they were taken on.
    monkeypatch.chdir(model_path.parent)
    form.find_element(By.NAME, "stance_model").send_keys(model_path.name)
    assert _inside(browser, "#what-if-form")
    shot(browser, tmp_path, f"what-if-form-{kind}", "#what-if-card")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    until(browser, lambda d: sid not in d.current_url and "/sessions/" in d.current_url)
    fork_sid = browser.current_url.rsplit("/", 1)[1]
    until(browser, lambda d: d.find_element(By.ID, "head-fsm").text == "DONE")
    assert "judge: lexical → learned" in browser.find_element(By.ID, "what-if").text
    assert "judge learned" in browser.find_element(By.ID, "verdict").text
    head = service.head(fork_sid)
    assert head.state.config["profile"]["judge"] == "learned"
    shot(browser, tmp_path, f"what-if-fork-{kind}")
    browser.find_element(By.ID, "compare-parent").click()
    until(browser, lambda d: "/compare?" in d.current_url)
    assert browser.find_element(By.ID, "relation").text == (
        f"{fork_sid} was forked from {sid}@{verify_at}")
    first = browser.find_element(By.ID, "first-difference").text
    assert f"differ at revision {verify_at + 1}" in first
    assert "judge lexical" in browser.find_element(By.ID, "profile-a").text
    assert "judge learned" in browser.find_element(By.ID, "profile-b").text
    verdicts = [browser.find_element(By.ID, f"verdict-{s}").text for s in "ab"]
    assert verdicts[0] == service.head(sid).state.verdict["label"]
    assert verdicts[1] == head.state.verdict["label"]
    assert _inside(browser, ".compare-side") and _inside(browser, "#compare-summary")
    shot(browser, tmp_path, f"compare-{kind}")


@pytest.mark.parametrize("size", SIZES, ids=["390x844", "1400x1000"])
def test_the_sessions_list_links_a_fork_to_its_parent(browser: Any, site: Any, tmp_path: Path,
                                                      size: tuple[int, int]) -> None:
    from selenium.webdriver.common.by import By

    kind = _size(browser, size)
    url, service, sid = site
    fork = service.fork(sid, 3)
    browser.get(f"{url}/")
    cell = browser.find_element(By.CSS_SELECTOR, f'#sessions tr[data-sid="{fork.sid}"]'
                                " a.forked-from")
    assert cell.text == f"{sid}@3"
    assert not browser.find_elements(By.CSS_SELECTOR, f'#sessions tr[data-sid="{sid}"]'
                                     " a.forked-from")
    # The page itself never scrolls sideways: the wide table scrolls inside its box.
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")
    assert _inside(browser, "#sessions-box")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', inline: 'center'})",
                           cell)
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.left >= 0 && r.right <= document.documentElement.clientWidth + 1", cell)
    shot(browser, tmp_path, f"sessions-forked-from-{kind}", "#sessions-box")
    cell.click()
    until(browser, lambda d: d.current_url.endswith(f"/sessions/{sid}"))
    back = browser.find_element(By.CSS_SELECTOR, f'#forks li[data-fork-sid="{fork.sid}"] a')
    assert back.get_attribute("href").endswith(f"/sessions/{fork.sid}")
