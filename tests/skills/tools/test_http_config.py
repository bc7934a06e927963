"""``[sources.NAME]`` is validated at the boundary: every mistake is ``BAD_CONFIG`` with
the dotted field named, and a good table keeps its values."""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm._base.errors import BadInput
from claimfsm.skills.tools.http.config import auth_headers, parse_sources

WIKI = {"kind": "mediawiki", "url": "https://wiki.example/w/api.php"}


def test_a_good_table_keeps_its_values() -> None:
    got = parse_sources({"wiki": {**WIKI, "timeout": 2.5},
                         "web": {"kind": "opensearch", "url": "http://h:9200/d/_search",
                                 "query": {"query": {"match": {"body": "{q}"}}}}})
    assert list(got) == ["web", "wiki"]
    assert got["wiki"].timeout == 2.5 and got["wiki"].kind == "mediawiki"
    assert got["web"].query == {"query": {"match": {"body": "{q}"}}}


@pytest.mark.parametrize(("table", "field", "words"), [
    ({"kb": WIKI}, "sources.kb", "unknown source"),
    ({"wiki": "x"}, "sources.wiki", "must be a table"),
    ({"wiki": {**WIKI, "kind": "bing"}}, "sources.wiki.kind", "mediawiki"),
    ({"wiki": {"kind": "mediawiki"}}, "sources.wiki.url", "Field required"),
    ({"wiki": {**WIKI, "url": "ftp://x"}}, "sources.wiki.url", "http://"),
    ({"wiki": {**WIKI, "timeout": 0}}, "sources.wiki.timeout", "greater than 0"),
    ({"wiki": {**WIKI, "timeout": "5s"}}, "sources.wiki.timeout", "number"),
    ({"wiki": {**WIKI, "max_bytes": 10}}, "sources.wiki.max_bytes", "1024"),
    ({"wiki": {**WIKI, "colour": "red"}}, "sources.wiki.colour", "Extra inputs"),
    ({"news": {"kind": "json", "url": "http://h/s"}}, "sources.news.url", "{q}"),
    ({"news": {"kind": "json", "url": "http://h/s?q={q}", "fields": {"title": "t"}}},
     "sources.news.fields", "'id'"),
    ({"news": {"kind": "json", "url": "http://h/s?q={q}", "fetch_url": "http://h/d"}},
     "sources.news.fetch_url", "{id}"),
    ({"web": {"kind": "opensearch", "url": "http://h/_search", "query": {"size": 3}}},
     "sources.web.query", "{q}"),
    ({"wiki": {**WIKI, "auth_env": "CLAIMFSM_NO_SUCH_VARIABLE"}}, "sources.wiki.auth_env",
     "not set"),
    ({"wiki": {**WIKI, "auth_env": "BAD-NAME"}}, "sources.wiki.auth_env", "pattern"),
])
def test_every_mistake_names_its_field(table: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_sources(table)
    assert err.value.code == "BAD_CONFIG" and err.value.field == field
    assert str(err.value).startswith(field) and words in str(err.value)


def test_the_credential_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAIMFSM_T_KEY", "Bearer abc")
    config = parse_sources({"wiki": {**WIKI, "auth_env": "CLAIMFSM_T_KEY",
                                     "auth_header": "X-Api-Key"}})["wiki"]
    assert auth_headers(config) == {"X-Api-Key": "Bearer abc"}
    assert "abc" not in config.model_dump_json()
