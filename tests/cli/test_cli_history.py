"""``claimfsm history``: every revision as before, or one page (--from, --limit) read by
key; the JSON page is the HTTP API's shape, and walking its ``next_offset`` gives the
whole history once."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.views import profile_text, revision_json, revision_line
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.model import Revision
from claimfsm.state.sqlite.store import SQLiteStore

STATES = ("PARSE_CLAIM", "RETRIEVAL", "RETRIEVAL", "EXTRACT", "VERIFY")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Revision]]:
    """A session of 1,234 revisions (over two of the command's internal chunks), moving
    between states so that the lines show moves."""
    db = tmp_path_factory.mktemp("history") / "h.db"
    with SQLiteStore(db) as store:
        state = make_state("long")
        store.create(make_revision("long", 0, state))
        for rev in range(1, 1234):
            state = state.model_copy(update={"fsm": STATES[rev % len(STATES)], "rounds": rev})
            store.commit(make_revision("long", rev, state, events=[{"type": "ToolInvoked"}]
                                       if rev % 3 == 0 else []), expected_rev=rev - 1)
        revisions = list(store.history("long"))
    return str(db), revisions


def _lines(revisions: list[Revision], before: str | None = None) -> list[str]:
    out = []
    for r in revisions:
        out.append(revision_line(r, before))
        before = r.fsm
    return out


def test_every_revision_prints_as_it_always_did(long_session: tuple[str, list[Revision]]) -> None:
    db, revisions = long_session
    res = invoke("history", "long", "--db", db)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [profile_text(revisions[-1]), *_lines(revisions)]
    listed = invoke("history", "long", "--db", db, "--json")
    assert orjson.loads(listed.output) == [revision_json(r, full=False) for r in revisions]


def test_a_page_moves_from_the_revision_before_it(
        long_session: tuple[str, list[Revision]]) -> None:
    db, revisions = long_session
    res = invoke("history", "long", "--from", "601", "--limit", "3", "--db", db)
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        profile_text(revisions[-1]), *_lines(revisions[601:604], revisions[600].fsm),
        "more: claimfsm history long --from 604 --limit 3"]
    last = invoke("history", "long", "--from", "1230", "--limit", "10", "--db", db)
    assert last.output.splitlines()[1:] == _lines(revisions[1230:], revisions[1229].fsm)
    rest = invoke("history", "long", "--from", "700", "--db", db)  # to the head, no page
    assert rest.output.splitlines()[1:] == _lines(revisions[700:], revisions[699].fsm)


def test_json_pages_walked_by_next_offset_give_the_history_once(
        long_session: tuple[str, list[Revision]]) -> None:
    db, revisions = long_session
    seen: list[dict[str, Any]] = []
    start: int | None = 0
    pages = 0
    while start is not None:
        res = invoke("history", "long", "--from", str(start), "--limit", "1000", "--db", db,
                     "--json")
        page = orjson.loads(res.output)
        assert set(page) == {"items", "total", "next_offset"} and page["total"] == 1234
        seen.extend(page["items"])
        start = page["next_offset"]
        pages += 1
    assert pages == 2 and seen == [revision_json(r, full=False) for r in revisions]


def test_a_start_past_the_head(long_session: tuple[str, list[Revision]]) -> None:
    db, _ = long_session
    res = invoke("history", "long", "--from", "1234", "--db", db)
    assert res.exit_code == 0 and res.output.splitlines()[1] == "no revision 1234: the head is 1233"
    page = orjson.loads(invoke("history", "long", "--from", "5000", "--limit", "5", "--db", db,
                               "--json").output)
    assert page == {"items": [], "total": 1234, "next_offset": None}


@pytest.mark.parametrize("args", [["--limit", "0"], ["--limit", "1001"], ["--from", "-1"],
                                  ["--from", "x"], ["--limit", "99999999999999999999"]])
def test_page_options_are_checked(long_session: tuple[str, list[Revision]],
                                  args: list[str]) -> None:
    db, _ = long_session
    res = invoke("history", "long", *args, "--db", db)
    assert res.exit_code == 2 and "Invalid value" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.parametrize("extra", [[], ["--limit", "5"], ["--json"], ["--json", "--limit", "5"]])
def test_an_unknown_session_is_its_code(long_session: tuple[str, list[Revision]],
                                        extra: list[str]) -> None:
    db, _ = long_session
    res = invoke("history", "nope", *extra, "--db", db)
    assert res.exit_code == 2 and "UNKNOWN_SESSION" in res.output

