"""The three backend kinds: each turns a query into hits and a document key into a page.

A backend's documents are named ``"{source}|{key}"`` (``wiki|Apollo 11``): ``|`` cannot
occur in a MediaWiki title, and no id of the bundled or Climate-FEVER corpora has it, so
``page_fetch`` knows from the id alone which backend serves it. A hit's full text, when
the answer carries it (``_search``, JSON), is kept (bounded) so ``page_fetch`` of a hit
costs no second call; MediaWiki pages come from its extracts (``prop=extracts``).
"""

from __future__ import annotations

import html
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from claimfsm._base.errors import ErrorCode
from claimfsm.skills.tools.documents import Document, Hit, Source
from claimfsm.skills.tools.http.client import HttpClient, HttpFailure
from claimfsm.skills.tools.http.config import DEFAULT_QUERY, SourceConfig, auth_headers

__all__ = ["SEP", "Backend", "JsonBackend", "MediaWikiBackend", "OpenSearchBackend",
           "backend_for", "split_id"]

SEP = "|"
_PAGES = 2048
_TAGS = re.compile(r"<[^>]*>")


def split_id(doc_id: str) -> tuple[str, str] | None:
    """``(source, key)`` of a backend's document id, ``None`` for an index id."""
    source, sep, key = doc_id.partition(SEP)
    return (source, key) if sep and key else None


def _plain(text: str) -> str:
    # MediaWiki snippets are HTML (<span class="searchmatch">): keep the words only.
    return " ".join(html.unescape(_TAGS.sub("", text)).split())


def _malformed(name: str, problem: str) -> HttpFailure:
    return HttpFailure(f"{name}: {problem}", code=ErrorCode.HTTP_MALFORMED)


def _text(obj: Any, key: str, name: str, where: str) -> str:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise _malformed(name, f"{where}: {key!r} is missing or not a string")
    return value


class Backend(Protocol):
    """What the routed tools need of a backend."""

    source: Source

    def search(self, q: str, lim: int) -> list[Hit]: ...

    def fetch(self, key: str) -> Document | None: ...


class _Base:
    def __init__(self, source: Source, config: SourceConfig) -> None:
        self.source: Source = source
        self.config = config
        self.client = HttpClient(timeout=config.timeout, max_bytes=config.max_bytes,
                                 headers=auth_headers(config), name=f"sources.{source}")
        self._pages: OrderedDict[str, Document] = OrderedDict()
        self._lock = threading.Lock()

    def _doc(self, key: str, title: str, text: str) -> Document:
        doc = Document(doc_id=f"{self.source}{SEP}{key}", title=title, text=text,
                       source=self.source)
        with self._lock:
            self._pages[key] = doc
            while len(self._pages) > _PAGES:
                self._pages.popitem(last=False)
        return doc

    def _kept(self, key: str) -> Document | None:
        with self._lock:
            return self._pages.get(key)

    def _hit(self, doc: Document, score: float, snippet: str | None = None) -> Hit:
        from claimfsm.skills.tools.index_terms import SNIPPET_CHARS

        text = " ".join((snippet if snippet is not None else doc.text).split())
        if len(text) > SNIPPET_CHARS:
            text = text[:SNIPPET_CHARS].rstrip() + "…"
        return Hit(doc_id=doc.doc_id, title=doc.title, source=self.source,
                   score=round(score, 6), snippet=text)


class MediaWikiBackend(_Base):
    """The MediaWiki Action API: ``list=search`` for hits, ``prop=extracts`` for pages.
    MediaWiki gives no score: a hit scores ``1 / rank`` (1.0, 0.5, ...)."""

    def _api(self, params: dict[str, str]) -> Any:
        query = urlencode({**params, "format": "json", "formatversion": "2"})
        sep = "&" if "?" in self.config.url else "?"
        return self.client.get(f"{self.config.url}{sep}{query}")

    def search(self, q: str, lim: int) -> list[Hit]:
        data = self._api({"action": "query", "list": "search", "srsearch": q,
                          "srlimit": str(lim), "srprop": "snippet"})
        rows = data.get("query", {}).get("search") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise _malformed(self.client.name, "no query.search list in the answer")
        hits = []
        for rank, row in enumerate(rows[:lim], start=1):
            title = _text(row, "title", self.client.name, f"query.search[{rank - 1}]")
            snippet = _plain(row.get("snippet", "")) if isinstance(row, dict) else ""
            doc = Document(doc_id=f"{self.source}{SEP}{title}", title=title, text=snippet,
                           source=self.source)
            hits.append(self._hit(doc, 1.0 / rank, snippet))
        return hits

    def fetch(self, key: str) -> Document | None:
        data = self._api({"action": "query", "prop": "extracts", "explaintext": "1",
                          "titles": key, "redirects": "1"})
        pages = data.get("query", {}).get("pages") if isinstance(data, dict) else None
        if not isinstance(pages, list):
            raise _malformed(self.client.name, "no query.pages list in the answer")
        for page in pages:
            if isinstance(page, dict) and not page.get("missing") and "extract" in page:
                title = _text(page, "title", self.client.name, "query.pages[]")
                return self._doc(key, title, _text(page, "extract", self.client.name,
                                                   "query.pages[]"))
        return None


def _fill(template: Any, q: str, lim: int) -> Any:
    """``template`` with ``"{lim}"`` (whole string) as the number and ``{q}``/``{lim}``
    inside strings replaced; the query goes in as data, never as query syntax."""
    if isinstance(template, dict):
        return {k: _fill(v, q, lim) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, q, lim) for v in template]
    if template == "{lim}":
        return lim
    if isinstance(template, str):
        return template.replace("{q}", q).replace("{lim}", str(lim))
    return template


class OpenSearchBackend(_Base):
    """An Elasticsearch/OpenSearch ``_search`` endpoint; the body from ``query`` (default
    :data:`~claimfsm.skills.tools.http.config.DEFAULT_QUERY`), hits from ``hits.hits``
    with ``_id``, ``_score`` and ``_source``; a page by an ``ids`` query."""

    def _hits(self, body: Any) -> list[tuple[Document, float]]:
        data = self.client.post(self.config.url, body)
        rows = data.get("hits", {}).get("hits") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise _malformed(self.client.name, "no hits.hits list in the answer")
        out = []
        for i, row in enumerate(rows):
            where = f"hits.hits[{i}]"
            key = _text(row, "_id", self.client.name, where)
            src = row.get("_source")
            text = _text(src, self.config.text_field, self.client.name, f"{where}._source")
            title = src.get(self.config.title_field, "")
            score = row.get("_score") or 0.0
            if not isinstance(score, (int, float)) or not isinstance(title, str):
                raise _malformed(self.client.name, f"{where}: _score or title of a bad type")
            out.append((self._doc(key, title, text), float(score)))
        return out

    def search(self, q: str, lim: int) -> list[Hit]:
        body = _fill(self.config.query or DEFAULT_QUERY, q, lim)
        return [self._hit(doc, score) for doc, score in self._hits(body)[:lim]]

    def fetch(self, key: str) -> Document | None:
        kept = self._kept(key)
        if kept is not None:
            return kept
        found = self._hits({"query": {"ids": {"values": [key]}}, "size": 1})
        return found[0][0] if found else None


def _path(data: Any, path: str, name: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if not isinstance(data, dict) or part not in data:
            raise _malformed(name, f"no {path!r} in the answer")
        data = data[part]
    return data


class JsonBackend(_Base):
    """A generic JSON API: ``url`` with ``{q}`` and ``{lim}`` (URL-quoted), the results
    at the dotted ``hits`` path, each mapped by ``fields``; ``fetch_url`` with ``{id}``
    for pages no search of this process has seen. Without a ``score`` field a result
    scores ``1 / rank``."""

    def _row(self, row: Any, where: str) -> tuple[Document, float | None]:
        f = self.config.fields
        name = self.client.name
        key = _text(row, f["id"], name, where)
        title = _text(row, f["title"], name, where) if "title" in f else ""
        doc = self._doc(key, title, _text(row, f["text"], name, where))
        score = row.get(f["score"]) if "score" in f else None
        if score is not None and (not isinstance(score, (int, float)) or isinstance(score, bool)):
            raise _malformed(name, f"{where}: {f['score']!r} is not a number")
        return doc, score

    def search(self, q: str, lim: int) -> list[Hit]:
        url = self.config.url.replace("{q}", quote(q, safe="")).replace("{lim}", str(lim))
        rows = _path(self.client.get(url), self.config.hits, self.client.name)
        if not isinstance(rows, list):
            raise _malformed(self.client.name, f"{self.config.hits or 'the answer'} is not a list")
        hits = []
        for i, row in enumerate(rows[:lim]):
            doc, score = self._row(row, f"{self.config.hits}[{i}]")
            hits.append(self._hit(doc, 1.0 / (i + 1) if score is None else float(score)))
        return hits

    def fetch(self, key: str) -> Document | None:
        kept = self._kept(key)
        if kept is not None or self.config.fetch_url is None:
            return kept
        row = self.client.get(self.config.fetch_url.replace("{id}", quote(key, safe="")))
        return self._row(row, "the answer")[0]


_KINDS: Mapping[str, type[_Base]] = {"mediawiki": MediaWikiBackend,
                                     "opensearch": OpenSearchBackend, "json": JsonBackend}


def backend_for(source: Source, config: SourceConfig) -> Backend:
    """The backend of ``config``'s kind, serving ``source``."""
    backend: Backend = _KINDS[config.kind](source, config)  # type: ignore[assignment]
    return backend
