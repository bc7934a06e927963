"""The HTTP search tools against a real server process on 127.0.0.1 (tests/support/
search_server.py) serving the demo corpus as MediaWiki, ``_search`` and a JSON API:
a query planned for a configured source goes to its backend, every failure is a failed
call with its code (never a traceback), answers are cached by request digest and the
credential never reaches a call's record."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.http.config import parse_sources
from claimfsm.skills.tools.http.route import backends_of, routed_tools
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.registry import ToolRegistry
from tests.support.search_server import Served, start

JSON_FIELDS = {"id": "key", "title": "name", "text": "body", "score": "relevance"}


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    served = start()
    yield served
    served.stop()


def sources(url: str, *, prefix: str = "", **extra: Any) -> dict[str, Any]:
    base = url + prefix
    return {
        "wiki": {"kind": "mediawiki", "url": f"{base}/w/api.php", "timeout": 2, **extra},
        "web": {"kind": "opensearch", "url": f"{base}/docs/_search", "timeout": 2, **extra},
        "news": {"kind": "json", "url": f"{base}/json/search?q={{q}}&n={{lim}}",
                 "hits": "results", "fields": JSON_FIELDS,
                 "fetch_url": f"{base}/json/doc/{{id}}", "timeout": 2, **extra},
    }


def executor(table: dict[str, Any], index: EvidenceIndex | None = None) -> Executor:
    idx = index or EvidenceIndex.open(":memory:")
    tools = routed_tools(idx, backends_of(parse_sources(table)))
    return Executor(ToolRegistry(tools), clock=FixedClock(), fallbacks={"search": "web_search"})


@pytest.mark.parametrize("src", ["wiki", "web", "news"])
def test_a_search_for_a_configured_source_goes_to_its_backend(server: Served, src: str) -> None:
    ex = executor(sources(server.url))
    call = ex.call("search", {"q": "NASA landed on the Moon in 1969", "lim": 3, "src": src})
    assert call.ok, call.message
    hits = call.value["hits"]
    assert len(hits) == 3 and all(h["doc_id"].startswith(f"{src}|") for h in hits)
    assert {h["source"] for h in hits} == {src}
    assert "Apollo 11" in {h["title"] for h in hits}
    page = ex.call("page_fetch", {"doc_id": hits[0]["doc_id"]})
    assert page.ok and page.value["doc_id"] == hits[0]["doc_id"] and len(page.value["text"]) > 40
    sents = ex.call("sentence_extract", {"doc_id": hits[0]["doc_id"], "q": "Moon 1969", "lim": 2})
    assert sents.ok and sents.value["sentences"]


def test_unconfigured_sources_stay_in_the_index(server: Served) -> None:
    index = EvidenceIndex.open(":memory:")
    from claimfsm.engine.runtime import seed_demo

    seed_demo(index)
    ex = executor({"news": sources(server.url)["news"]}, index)
    wiki = ex.call("search", {"q": "Apollo 11 Moon", "lim": 2, "src": "wiki"})
    assert wiki.ok and not any("|" in h["doc_id"] for h in wiki.value["hits"])
    both = ex.call("web_search", {"q": "Apollo 11 Moon", "lim": 6})
    ids = [h["doc_id"] for h in both.value["hits"]]
    assert any(i.startswith("news|") for i in ids) and any("|" not in i for i in ids)
    ranked = ex.call("rank", {"q": "Apollo 11 Moon landing", "doc_ids": ids})
    assert ranked.ok and {r["doc_id"] for r in ranked.value["ranked"]} == set(ids)


@pytest.mark.parametrize(("fault", "code"), [
    ("html", "HTTP_NOT_JSON"), ("text", "HTTP_NOT_JSON"), ("malformed", "HTTP_MALFORMED"),
    ("huge", "HTTP_TOO_LARGE"), ("500", "HTTP_STATUS"), ("hang", "HTTP_TIMEOUT"),
    ("drop", "HTTP_UNREACHABLE"),
])
def test_a_bad_answer_is_a_failed_call_with_its_code(server: Served, fault: str,
                                                     code: str) -> None:
    table = sources(server.url, prefix=f"/fault/{fault}", timeout=0.5, max_bytes=1 << 20)
    ex = executor(table)
    for src in ("wiki", "web", "news"):
        call = ex.call("search", {"q": "Moon landing", "lim": 3, "src": src})
        assert not call.ok and call.code == code, (src, call)
        assert f"sources.{src}" in call.message


def test_a_rate_limited_backend_falls_back_to_web_search(server: Served) -> None:
    table = {"wiki": sources(server.url, prefix="/fault/429")["wiki"]}
    index = EvidenceIndex.open(":memory:")
    from claimfsm.engine.runtime import seed_demo

    seed_demo(index)
    ex = executor(table, index)
    call = ex.call("search", {"q": "Apollo 11", "lim": 2, "src": "wiki"})
    # wiki's backend said 429: the executor's fallback asked every source, and the
    # failing backend is part of every source, so the fallback fails the same way.
    assert [c.code for c in ex.calls] == ["RATE_LIMITED", "RATE_LIMITED"]
    assert not call.ok


def test_a_server_that_is_not_there_is_unreachable() -> None:
    ex = executor({"wiki": {"kind": "mediawiki", "url": "http://127.0.0.1:9/w/api.php",
                            "timeout": 1}})
    call = ex.call("search", {"q": "Moon", "lim": 2, "src": "wiki"})
    assert not call.ok and call.code == "HTTP_UNREACHABLE"


def _count(server: Served) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/seen", timeout=5) as resp:
        return int(orjson.loads(resp.read())["count"])


def test_answers_are_cached_by_request_digest(server: Served) -> None:
    ex = executor(sources(server.url))
    before = _count(server)
    first = ex.call("search", {"q": "Apollo 13 oxygen", "lim": 3, "src": "web"})
    again = ex.call("search", {"q": "Apollo 13 oxygen", "lim": 3, "src": "web"})
    other = ex.call("search", {"q": "Apollo 13 oxygen", "lim": 2, "src": "web"})
    assert first.value == again.value and other.ok
    assert _count(server) - before == 2  # the repeat was answered from the cache


def test_the_credential_is_sent_but_never_recorded(server: Served,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "Bearer s3cr3t-token-for-the-test"
    monkeypatch.setenv("CLAIMFSM_TEST_SEARCH_KEY", secret)
    ex = executor(sources(server.url, auth_env="CLAIMFSM_TEST_SEARCH_KEY"))
    call = ex.call("search", {"q": "Artemis Moon", "lim": 2, "src": "news"})
    assert call.ok
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/seen", timeout=5) as resp:
        seen = orjson.loads(resp.read())
    assert seen["headers"].get("Authorization") == secret  # /seen shows the last search
    dumped = orjson.dumps([c.model_dump() for c in ex.calls] + ex.events)
    assert b"s3cr3t" not in dumped and secret not in repr(ex.registry.tools())


def test_the_header_reaches_the_server(server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    from claimfsm.skills.tools.http.client import HttpClient

    client = HttpClient(timeout=2, max_bytes=1 << 20, headers={"X-Api-Key": "k-123"})
    client.get(f"{server.url}/json/search?q=zzzunique{os.getpid()}&n=1")
    headers = client.get(f"{server.url}/seen")["headers"]
    assert headers.get("X-Api-Key") == "k-123"
