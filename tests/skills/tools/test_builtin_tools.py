"""The built-in evidence tools, called through their handlers with a real ToolContext."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ValidationError

from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.builtin import (
    KbLookupParams,
    PageFetchParams,
    SearchParams,
    SentenceExtractParams,
    WebSearchParams,
    builtin_tools,
)
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact
from claimfsm.skills.tools.registry import ToolRegistry

APOLLO = (
    "Apollo 11 was the spaceflight that first landed humans on the Moon. "
    "Commander Neil Armstrong and pilot Buzz Aldrin landed on July 20, 1969. "
    "Dr. Armstrong later taught engineering in the U.S. at a university. "
    "The mission returned to Earth on July 24."
)


@pytest.fixture
def index() -> EvidenceIndex:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents([Document(doc_id="Apollo 11", title="Apollo 11", text=APOLLO)],
                      source="wiki")
    idx.add_documents([Document(doc_id="n1", title="Moon news", text="A lander reached the "
                                "Moon again in 2024.")], source="news")
    idx.add_documents([Document(doc_id="w1", title="Moon blog", text="Was the Moon landing "
                                "in 1969 real? Yes.")], source="web")
    idx.add_facts([
        Fact(id="f1", subject="Apollo 11", relation="landing date", object="1969-07-20"),
        Fact(id="f2", subject="Mars", relation="moons", object="Phobos and Deimos"),
    ])
    return idx


@pytest.fixture
def tools(index: EvidenceIndex) -> dict[str, Tool[Any, Any]]:
    return {t.name: t for t in builtin_tools(index)}


def call(tool: Tool[Any, Any], **args: Any) -> ToolResult[Any]:
    params = tool.params.model_validate(args)
    return tool.handler(params, context=ToolContext(clock=FixedClock(), tool=tool.name))


def ok(tool: Tool[Any, Any], **args: Any) -> Any:
    """The value of a call that must succeed."""
    result = call(tool, **args)
    assert result.success and result.code is None and result.value is not None, result
    return result.value


def dump(result: ToolResult[Any]) -> bytes:
    assert result.value is not None
    return orjson.dumps(result.value.model_dump(mode="json"))


def test_the_builtin_tools_register_and_their_examples_validate(
    tools: dict[str, Tool[Any, Any]], index: EvidenceIndex
) -> None:
    assert list(tools) == ["search", "web_search", "kb_lookup", "page_fetch", "sentence_extract",
                           "rank"]
    registry = ToolRegistry(builtin_tools(index))  # refuses malformed tools and examples
    assert registry.names() == tuple(tools)
    for tool in tools.values():
        assert tool.examples, tool.name
        assert 1 <= len(tool.description) <= 200
        assert tool.params.model_config.get("extra") == "forbid"
        for ex in tool.examples:
            assert isinstance(ex.input, tool.params) and isinstance(ex.output, tool.result)
            tool.params.model_validate(ex.input.model_dump())
            tool.result.model_validate(orjson.loads(dump(ToolResult.ok(ex.output))))


def test_search_filters_to_its_source(tools: dict[str, Tool[Any, Any]]) -> None:
    result = call(tools["search"], q="Moon landing 1969", lim=4, src="wiki")
    assert result.message == "1 hit in wiki"
    hits = ok(tools["search"], q="Moon landing 1969", lim=4, src="wiki").hits
    assert [h.doc_id for h in hits] == ["Apollo 11"]
    assert hits[0].source == "wiki" and hits[0].score > 0
    assert hits[0].snippet.startswith("Apollo 11 was the spaceflight")
    news = ok(tools["search"], q="Moon landing 1969", lim=4, src="news")
    assert [h.doc_id for h in news.hits] == ["n1"]


def test_search_with_no_match_is_an_empty_success(tools: dict[str, Tool[Any, Any]]) -> None:
    assert ok(tools["search"], q="zebra crossing", src="wiki").hits == ()
    assert call(tools["search"], q="zebra crossing", src="wiki").message == "0 hits in wiki"


def test_web_search_covers_every_source(tools: dict[str, Tool[Any, Any]]) -> None:
    hits = ok(tools["web_search"], q="Moon", lim=10).hits
    assert {h.source for h in hits} == {"wiki", "news", "web"}
    assert len(ok(tools["web_search"], q="Moon", lim=2).hits) == 2


def test_kb_lookup(tools: dict[str, Tool[Any, Any]]) -> None:
    facts = ok(tools["kb_lookup"], q="Apollo 11 landing date", lim=3).facts
    assert [f.id for f in facts] == ["f1"]
    assert facts[0].object == "1969-07-20"
    assert call(tools["kb_lookup"], q="Apollo 11 landing date").message == "1 fact"


def test_page_fetch_and_not_found(tools: dict[str, Tool[Any, Any]]) -> None:
    assert ok(tools["page_fetch"], doc_id="Apollo 11").model_dump() == {
        "doc_id": "Apollo 11", "title": "Apollo 11", "source": "wiki", "text": APOLLO,
    }
    missing = call(tools["page_fetch"], doc_id="Apollo 12")
    assert not missing.success and missing.value is None
    assert missing.code == "NOT_FOUND" and "doc_id" in missing.message


def test_sentence_extract_ranks_sentences_with_ids(tools: dict[str, Tool[Any, Any]]) -> None:
    value = ok(tools["sentence_extract"], doc_id="Apollo 11", q="landed on the Moon 1969",
               lim=2)
    assert value.doc_id == "Apollo 11"
    assert [s.idx for s in value.sentences] == [1, 0]
    assert [s.id for s in value.sentences] == ["Apollo 11#1", "Apollo 11#0"]
    assert value.sentences[0].text == (
        "Commander Neil Armstrong and pilot Buzz Aldrin landed on July 20, 1969."
    )
    assert value.sentences[0].score > value.sentences[1].score > 0
    everything = ok(tools["sentence_extract"], doc_id="Apollo 11", q="Moon", lim=50)
    assert len(everything.sentences) == 4  # "Dr." and "U.S." did not split
    assert [s.score > 0 for s in everything.sentences] == [True, False, False, False]


def test_sentence_extract_unknown_document(tools: dict[str, Tool[Any, Any]]) -> None:
    result = call(tools["sentence_extract"], doc_id="nope", q="Moon")
    assert not result.success and result.code == "NOT_FOUND"


def test_handlers_are_deterministic(index: EvidenceIndex) -> None:
    first = {t.name: t for t in builtin_tools(index)}
    second = {t.name: t for t in builtin_tools(index)}
    args: dict[str, dict[str, Any]] = {
        "search": {"q": "Moon 1969", "src": "wiki"},
        "web_search": {"q": "Moon 1969", "lim": 10},
        "kb_lookup": {"q": "Apollo"},
        "page_fetch": {"doc_id": "Apollo 11"},
        "sentence_extract": {"doc_id": "Apollo 11", "q": "Moon 1969", "lim": 10},
    }
    for name, a in args.items():
        assert dump(call(first[name], **a)) == dump(call(second[name], **a)), name


def test_a_database_failure_is_an_error_result(
    tools: dict[str, Tool[Any, Any]], index: EvidenceIndex
) -> None:
    index.close()
    for name, args in [("search", {"q": "Moon", "src": "wiki"}), ("web_search", {"q": "Moon"}),
                       ("kb_lookup", {"q": "Apollo"}), ("page_fetch", {"doc_id": "Apollo 11"}),
                       ("sentence_extract", {"doc_id": "Apollo 11", "q": "Moon"})]:
        result = call(tools[name], **args)
        assert not result.success and result.code == "INDEX_ERROR", name


@pytest.mark.parametrize(
    ("model", "args", "field"),
    [
        (SearchParams, {"q": "x"}, "src"),
        (SearchParams, {"q": "x", "src": "kb"}, "src"),
        (SearchParams, {"q": "", "src": "wiki"}, "q"),
        (SearchParams, {"q": "x" * 501, "src": "wiki"}, "q"),
        (SearchParams, {"q": "x", "src": "wiki", "lim": 0}, "lim"),
        (SearchParams, {"q": "x", "src": "wiki", "lim": 51}, "lim"),
        (SearchParams, {"q": "x", "src": "wiki", "extra": 1}, "extra"),
        (WebSearchParams, {"q": "x", "src": "wiki"}, "src"),
        (KbLookupParams, {"q": "x", "src": "wiki"}, "src"),
        (PageFetchParams, {"doc_id": ""}, "doc_id"),
        (SentenceExtractParams, {"doc_id": "a"}, "q"),
        (SentenceExtractParams, {"doc_id": "a", "q": "x", "lim": 99}, "lim"),
    ],
)
def test_params_refuse_bad_arguments(model: type[BaseModel], args: dict[str, Any],
                                     field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(args)
    assert exc.value.errors()[0]["loc"][0] == field


def test_param_defaults() -> None:
    assert SearchParams(q="x", src="news").lim == 5
    assert KbLookupParams(q="x").src == "kb"
    assert SentenceExtractParams(doc_id="a", q="x").lim == 5
