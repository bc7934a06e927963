"""``claimfsm bench ui`` (``make bench-ui``): how fast the inspector serves a large store.

Builds (once, cached under ``.cache/``) a SQLite store of 100,000 sessions — every
hundredth run to a verdict, the rest started — plus one session of 100 revisions, serves
it with uvicorn on loopback, and measures over real HTTP: the sessions page's first page
and pages deep into the keyset (median of repeated requests), a filtered page, and the API
listing; and, once each on a catalog that has listed nothing yet, the first page and the
first search (which read the claims they have not seen from the sessions' revision 0).
With selenium and Debian's chromium it also measures the session page of 100 revisions
loaded and rendered in headless Chromium (navigation start to the load event, plus the
time until the timeline is in the DOM). ``claimfsm bench ui`` prints the figures and
``--json FILE`` writes them; the command's options live in ``claimfsm.cli.bench``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from claimfsm.state.catalog import SummaryQuery

__all__ = ["build_store", "format_table", "get_ms", "median_ms", "run_bench"]

CLAIMS = ("NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin.",
          "Honey never spoils.", "Water boils at 100 degrees Celsius at sea level.")


def build_store(db: Path, sessions: int,
                progress: Callable[[str], None] | None = None) -> str:
    """Create ``db`` with ``sessions`` sessions and one of 100 revisions; returns its sid.
    ``progress`` hears every 10,000th session (a full build takes about a minute)."""
    from claimfsm.engine.runtime import Engine

    with Engine.open(str(db)) as eng:
        have = len(eng.store.sessions())
        for n in range(have, sessions):
            head = eng.start(f"{CLAIMS[n % len(CLAIMS)]} (#{n})")
            if n % 100 == 0:
                eng.driver.run(head.sid)
            if n and n % 10_000 == 0 and progress is not None:
                progress(f"  {n:,} sessions")
        page = eng.store.summaries(SummaryQuery(q="long session", limit=1))
        if page.items:
            return page.items[0].sid
        head = eng.driver.run(eng.start("A long session: glaciers are melting.").sid)
        while head.rev < 99:
            back = eng.driver.rollback(head.sid, max(1, head.rev % 7), reopen=True)
            head = eng.driver.run(back.sid) if back.rev < 99 else back
        return head.sid


def get_ms(url: str) -> float:
    """Milliseconds one GET of ``url`` takes, body read."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        r.read()
    return (time.perf_counter() - start) * 1000


def median_ms(url: str, n: int = 15) -> float:
    """The median of ``n`` timed GETs of ``url`` after one that warms it."""
    get_ms(url)  # warm
    return statistics.median(get_ms(url) for _ in range(n))


def _chromium(url: str) -> dict[str, float] | None:
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service as DriverService
    except ImportError:
        return None
    if chromium is None or driver_path is None:
        return None
    os.environ.setdefault("SE_OFFLINE", "true")
    options = Options()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--window-size=1400,1000"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=DriverService(driver_path), options=options)
    try:
        loads, rendered = [], []
        for _ in range(6):
            browser.get(url)
            t: dict[str, float] = browser.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "return {load: n.loadEventEnd, dom: n.domContentLoadedEventEnd};")
            loads.append(t["load"])
            rendered.append(t["dom"])
        return {"load_ms": statistics.median(loads[1:]),
                "dom_ms": statistics.median(rendered[1:])}
    finally:
        browser.quit()


def run_bench(db: Path, sessions: int = 100_000,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build ``db`` up to ``sessions`` sessions if needed, serve it on loopback, and return
    the figures (milliseconds under ``*_ms`` keys); ``progress`` hears how the build goes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    long_sid = build_store(db, sessions, progress)
    built = time.perf_counter() - t0
    import uvicorn

    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service

    # As if no session had been listed yet: the claims the catalog fills on first sight.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM st_catalog WHERE verdict IS NULL")
        conn.execute("UPDATE st_catalog SET claim = NULL")
    conn.close()
    service = Service.open(str(db))
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=0,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    deep = service.sessions(SummaryQuery(before=sessions // 2, limit=1)).items[0].seq
    cold = {"first_page_cold_ms": get_ms(f"{base}/"),  # fills the page's claims
            "first_search_cold_ms": get_ms(f"{base}/?q=%23777")}  # fills every claim
    out: dict[str, Any] = {
        "sessions": len(service.engine.store.sessions()), "build_s": round(built, 1), **cold,
        "first_page_ms": median_ms(f"{base}/"),
        "deep_page_ms": median_ms(f"{base}/?before={deep}"),
        "last_page_ms": median_ms(f"{base}/?before=60"),
        "api_page_ms": median_ms(f"{base}/api/v1/sessions?before={deep}"),
        "filter_done_ms": median_ms(f"{base}/?fsm=DONE&before={deep}"),
        "search_ms": median_ms(f"{base}/?q=%23777"),
        "session_100_server_ms": median_ms(f"{base}/sessions/{long_sid}"),
        "session_revisions": service.head(long_sid).rev + 1,
    }
    browser = _chromium(f"{base}/sessions/{long_sid}")
    if browser is not None:
        out["session_100_chromium_load_ms"] = browser["load_ms"]
        out["session_100_chromium_dom_ms"] = browser["dom_ms"]
    server.should_exit = True
    thread.join(10)
    service.close()
    return out


def format_table(figures: dict[str, Any]) -> str:
    """The figures of :func:`run_bench` for people, one per line."""
    return "\n".join(f"{key:<32} {value:>10.1f}" if isinstance(value, float) else
                     f"{key:<32} {value:>10}" for key, value in figures.items())
