"""``[sources.NAME]`` of ``claimfsm.toml``: which source goes to which HTTP backend.

Validated once, at the boundary: an unknown key, a bad kind, a URL that is not http(s),
a JSON template without ``{q}`` is a ``BAD_CONFIG`` error whose ``field`` is the dotted
key (``sources.wiki.url``). Credentials never appear here: ``auth_env`` names the
environment variable whose value is sent as the ``auth_header``; the value is read when
the backend is built and kept only in the request headers, which no record holds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claimfsm._base.errors import BadInput, ErrorCode
from claimfsm.skills.tools.documents import SOURCES

__all__ = ["DEFAULT_QUERY", "Kind", "SourceConfig", "auth_headers", "parse_sources"]

Kind = Literal["mediawiki", "opensearch", "json"]

DEFAULT_QUERY: Mapping[str, Any] = {
    "size": "{lim}",
    "query": {"multi_match": {"query": "{q}", "fields": ["title^2", "text"]}},
}
"""The ``_search`` body an ``opensearch`` source sends unless it sets ``query``: BM25 over
title (weighted twice, as the SQLite index does) and text. ``"{q}"`` and ``"{lim}"`` are
replaced by the query and the limit (a whole ``"{lim}"`` string by the number)."""


class SourceConfig(BaseModel):
    """One ``[sources.NAME]`` table."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    kind: Kind
    url: str = Field(min_length=1)
    """The API endpoint (MediaWiki ``api.php``; the ``_search`` URL; the JSON URL template
    with ``{q}`` and optionally ``{lim}``)."""
    timeout: float = Field(default=5.0, gt=0, le=120)
    max_bytes: int = Field(default=4_000_000, ge=1024, le=256_000_000)
    auth_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    auth_header: str = Field(default="Authorization", pattern=r"^[A-Za-z0-9-]{1,64}$")
    # opensearch
    query: dict[str, Any] | None = None
    title_field: str = "title"
    text_field: str = "text"
    # json
    hits: str = "hits"
    """Dotted path to the list of results in a ``json`` answer (``""``: the answer is the list)."""
    fields: dict[str, str] = Field(default_factory=lambda: {"id": "id", "title": "title",
                                                            "text": "text"})
    """Result field -> the answer's key, for ``id``, ``title``, ``text`` and ``score``."""
    fetch_url: str | None = None
    """``json``: a URL template with ``{id}`` answering one result object (page_fetch of a
    document no search of this process has seen)."""

    @field_validator("url", "fetch_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("fields")
    @classmethod
    def _fields(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - {"id", "title", "text", "score"})
        if unknown:
            raise ValueError(f"unknown result field {unknown[0]!r} (id, title, text, score)")
        missing = sorted({"id", "text"} - set(value))
        if missing:
            raise ValueError(f"must map {missing[0]!r}")
        return value

    def checked(self, name: str) -> SourceConfig:
        """Kind-specific rules, with the dotted field in the error."""
        if self.kind == "json" and "{q}" not in self.url:
            raise _bad(name, "url", "a json source's URL template needs {q}")
        if self.fetch_url is not None and "{id}" not in self.fetch_url:
            raise _bad(name, "fetch_url", "needs {id}")
        if self.kind == "opensearch" and self.query is not None and "{q}" not in repr(self.query):
            raise _bad(name, "query", 'the template needs "{q}" somewhere')
        if self.auth_env is not None and not os.environ.get(self.auth_env):
            raise _bad(name, "auth_env", f"environment variable {self.auth_env} is not set")
        return self


def _bad(name: str, key: str, problem: str) -> BadInput:
    field = f"sources.{name}.{key}" if key else f"sources.{name}"
    return BadInput(f"{field}: {problem}", field=field, code=ErrorCode.BAD_CONFIG)


def parse_sources(table: Any) -> dict[str, SourceConfig]:
    """The ``[sources]`` table as configs by source name, in name order; a
    :class:`~claimfsm._base.errors.BadInput` with code ``BAD_CONFIG`` naming the field."""
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise BadInput("sources: must be a table of [sources.NAME] tables", field="sources",
                       code=ErrorCode.BAD_CONFIG)
    out: dict[str, SourceConfig] = {}
    for name in sorted(table):
        if name not in SOURCES:
            raise _bad(str(name), "", f"unknown source (the cards plan {', '.join(SOURCES)}; "
                       "kb stays in the evidence index)")
        body = table[name]
        if not isinstance(body, Mapping):
            raise _bad(name, "", "must be a table")
        try:
            config = SourceConfig.model_validate(dict(body))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            raise _bad(name, key, msg) from None
        out[name] = config.checked(name)
    return out


def auth_headers(config: SourceConfig) -> dict[str, str]:
    """The header carrying the credential named by ``auth_env`` (empty without one)."""
    if config.auth_env is None:
        return {}
    return {config.auth_header: os.environ.get(config.auth_env, "")}
