"""The HTTP API's history pages: read by key (``offset`` is the first revision), the
session's count and the next page's start, and every bad page a BAD_INPUT naming its
parameter (``limit=0`` used to be served as 100)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.views import revision_json
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.store import SQLiteStore
from tests.support.components import need_module

need_module("starlette", "ui")
from tests.support.ui_helpers import app_client  # noqa: E402

N = 1_234


@pytest.fixture(scope="module")
def long_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Revision]]:
    db = tmp_path_factory.mktemp("ui-history") / "h.db"
    with SQLiteStore(db) as store:
        state = make_state("long")
        store.create(make_revision("long", 0, state))
        for rev in range(1, N):
            state = state.model_copy(update={"rounds": rev})
            store.commit(make_revision("long", rev, state), expected_rev=rev - 1)
        return db, list(store.history("long"))


@pytest.fixture
def client(long_db: tuple[Path, list[Revision]]) -> Iterator[Any]:
    with app_client(long_db[0]) as c:
        yield c


def test_pages_walked_by_next_offset_give_the_history_once(
        client: Any, long_db: tuple[Path, list[Revision]]) -> None:
    _, revisions = long_db
    seen: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = client.get(f"/api/v1/sessions/long/history?offset={offset}&limit=500").json()
        assert page["total"] == N
        seen.extend(page["items"])
        offset = page["next_offset"]
    assert seen == [revision_json(r, full=False) for r in revisions]


def test_a_page_deep_in_the_session(client: Any, long_db: tuple[Path, list[Revision]]) -> None:
    _, revisions = long_db
    page = client.get("/api/v1/sessions/long/history?offset=1100&limit=7").json()
    assert page == {"items": [revision_json(r, full=False) for r in revisions[1100:1107]],
                    "total": N, "next_offset": 1107}
    end = client.get(f"/api/v1/sessions/long/history?offset={N - 1}&limit=1000").json()
    assert [r["rev"] for r in end["items"]] == [N - 1] and end["next_offset"] is None
    past = client.get(f"/api/v1/sessions/long/history?offset={2**62}").json()
    assert past == {"items": [], "total": N, "next_offset": None}
    # Past the store's 64-bit integers: refused, not a 500 and not an empty page.
    over = client.get(f"/api/v1/sessions/long/history?offset={10**30}")
    assert over.status_code == 422 and over.json()["error"]["field"] == "offset"


@pytest.mark.parametrize("query,field", [("limit=0", "limit"), ("limit=1001", "limit"),
                                         ("limit=-3", "limit"), ("offset=-1", "offset"),
                                         ("offset=x", "offset"), ("limit=1.5", "limit")])
def test_a_bad_page_is_bad_input_naming_its_parameter(client: Any, query: str,
                                                      field: str) -> None:
    r = client.get(f"/api/v1/sessions/long/history?{query}")
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "BAD_INPUT" and err["field"] == field and err["msg"].startswith(field)


def test_a_page_of_an_unknown_session(client: Any) -> None:
    r = client.get("/api/v1/sessions/nope/history?limit=5")
    assert r.status_code == 404 and r.json()["error"]["code"] == "UNKNOWN_SESSION"


# -- the inspector's session page: one page of the timeline, read by key ------------------


def _shown(html: str) -> list[int]:
    return [int(part.split('"', 1)[0]) for part in html.split('<tr class="rev" data-rev="')[1:]]


def test_the_session_page_shows_the_newest_page_and_links_to_older_ones(
        client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from claimfsm.ui.pages import SESSION_PAGE

    read: list[tuple[int, int]] = []
    real_page = SQLiteStore.history_page

    def page_spy(self: SQLiteStore, sid: str, start: int, limit: int) -> Any:
        read.append((start, limit))
        return real_page(self, sid, start, limit)

    def whole(self: SQLiteStore, sid: str) -> Any:
        raise AssertionError("the session page read the whole history")

    monkeypatch.setattr(SQLiteStore, "history_page", page_spy)
    monkeypatch.setattr(SQLiteStore, "history", whole)
    html = client.get("/sessions/long").text
    assert _shown(html) == list(range(N - SESSION_PAGE, N))
    assert read == [(N - SESSION_PAGE, SESSION_PAGE)]
    assert f"revisions {N - SESSION_PAGE}–{N - 1} of {N}" in html
    assert f'id="older" href="/sessions/long?before={N - SESSION_PAGE}"' in html
    assert 'id="newest"' not in html  # this is the newest page
    # Walking "older revisions" to the first page gives every revision once, a page each.
    seen, href, pages = _shown(html), f"/sessions/long?before={N - SESSION_PAGE}", 1
    while href:
        html = client.get(href).text
        assert 'id="newest" href="/sessions/long"' in html and f'data-rev="{N - 1}"' in html
        seen = _shown(html) + seen
        pages += 1
        found = html.split('id="older" href="', 1)
        href = found[1].split('"', 1)[0] if len(found) == 2 else ""
    assert seen == list(range(N)) and pages == -(-N // SESSION_PAGE)
    assert all(limit <= SESSION_PAGE for _, limit in read) and len(read) == pages


def test_the_live_panels_keep_the_page_the_reader_is_on(client: Any) -> None:
    panels = client.get("/sessions/long/panels?before=250").text
    assert _shown(panels) == list(range(150, 250)) and "<html" not in panels
    assert 'id="older" href="/sessions/long?before=150"' in panels
    assert _shown(client.get("/sessions/long/panels?before=40").text) == list(range(40))


@pytest.mark.parametrize("before", ["0", str(N + 1), "-5", "x", "1.5"])
def test_a_bad_before_is_bad_input_naming_it(client: Any, before: str) -> None:
    for path in ("/sessions/long", "/sessions/long/panels"):
        r = client.get(f"{path}?before={before}")
        assert r.status_code == 422, (path, r.text)
        assert "<code>BAD_INPUT</code>: before: " in r.text
