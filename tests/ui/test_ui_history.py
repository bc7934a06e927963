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
    past = client.get(f"/api/v1/sessions/long/history?offset={10**30}").json()
    assert past == {"items": [], "total": N, "next_offset": None}


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
