"""HTML building blocks shared by the pages and the report: the page shell with the
stylesheet inlined, JSON rendered with one path highlighted, evidence with the claim's
key terms marked. Everything is escaped here; callers pass plain values."""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import urlencode

import orjson

from claimfsm.replay.diff import join_path
from claimfsm.skills.analysis.text import keywords, stem
from claimfsm.ui.static import asset
from claimfsm.ui.viewer import VIEWER

__all__ = ["csrf_field", "e", "json_html", "mark_terms", "page", "pager", "pretty"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def pretty(value: Any) -> str:
    """JSON for people (two-space indent, keys in their order)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def csrf_field() -> str:
    """The hidden CSRF input a page's POST form starts with (docs/security.md); empty
    when nobody is logged in (a store without keys)."""
    viewer = VIEWER.get()
    if viewer is None or viewer.csrf is None:
        return ""
    return f'<input type="hidden" name="csrf" value="{e(viewer.csrf)}">'


def page(title: str, body: str, *, script: str = "", nav: bool = True) -> str:
    """A whole HTML document: the stylesheet inlined, no external resource. ``script``
    names a packaged script (``session.js``) to inline at the end of the body."""
    links = ('<nav><a href="/">Sessions</a><a href="/review">Review queue</a>'
             '<a href="/replay">Replay</a>'
             '<a href="/api/v1/openapi.json">API</a></nav>') if nav else ""
    # Each asset starts on the line after its tag, as the pages have always served it.
    js = f"<script>\n{asset(script)}</script>" if script else ""
    meta, who = "", ""
    viewer = VIEWER.get()
    if viewer is not None:  # the store has keys (docs/security.md)
        meta = (f'<meta name="claimfsm-role" content="{e(viewer.role)}">'
                f'<meta name="claimfsm-viewer" content="{e(viewer.name)}">')
        if viewer.csrf is not None:
            meta += f'<meta name="csrf-token" content="{e(viewer.csrf)}">'
            who = ('<form class="inline" method="post" action="/logout" id="logout">'
                   f'<input type="hidden" name="csrf" value="{e(viewer.csrf)}">'
                   f'<span id="viewer">{e(viewer.name)} ({e(viewer.role)})</span> '
                   '<button class="small" type="submit">Log out</button></form>')
        js = f"<script>\n{asset('auth.js')}</script>{js}"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{meta}'
            f"<title>{e(title)} · claimfsm</title><style>\n{asset('inspector.css')}</style>"
            "</head>"
            f'<body><header><b>claimfsm</b>{links}{who}</header><main>{body}</main>{js}'
            f"</body></html>")


def mark_terms(text: str, claim: str) -> str:
    """``text`` escaped, with words sharing a stem with the claim's key terms in <mark>."""
    stems = {stem(k) for k in keywords(claim)}
    out, last = [], 0
    for m in _WORD.finditer(text):
        if stem(m.group(0).lower()) in stems:
            out.append(e(text[last:m.start()]))
            out.append(f"<mark>{e(m.group(0))}</mark>")
            last = m.end()
    out.append(e(text[last:]))
    return "".join(out)


def json_html(value: Any, highlight: str | None = None) -> str:
    """Pretty JSON as escaped HTML; the value at path ``highlight`` (as divergence reports
    name it: ``d.plans[0].q``) is wrapped in ``<mark id="hit">``."""
    parts: list[str] = []
    _emit(value, "", 0, highlight, parts)
    return "".join(parts)


def _emit(value: Any, path: str, depth: int, hit: str | None, out: list[str]) -> None:
    pad = "  " * depth
    marked = hit is not None and path == hit
    if marked:
        out.append('<mark id="hit">')
    if isinstance(value, dict) and value:
        out.append("{\n")
        items: Iterable[tuple[str, Any]] = value.items()
        for n, (key, item) in enumerate(items):
            out.append(f"{pad}  {e(orjson.dumps(key).decode())}: ")
            _emit(item, join_path(path, key), depth + 1, hit, out)
            out.append(",\n" if n < len(value) - 1 else "\n")
        out.append(f"{pad}}}")
    elif isinstance(value, list) and value:
        out.append("[\n")
        for n, item in enumerate(value):
            out.append(f"{pad}  ")
            _emit(item, join_path(path, n), depth + 1, hit, out)
            out.append(",\n" if n < len(value) - 1 else "\n")
        out.append(f"{pad}]")
    else:
        out.append(e(orjson.dumps(value).decode()))
    if marked:
        out.append("</mark>")


def pager(path: str, keep: dict[str, Any], *, paged: bool, cursor: str,
          next_key: Any) -> str:
    """A list page's "first page" (when ``paged``: past the first) and "next page" links:
    ``keep`` are the filters to carry, ``cursor`` the query key ``next_key`` goes in."""
    nav = []
    if paged:
        nav.append(f'<a class="button" href="{path}?{e(urlencode(keep))}">first page</a>')
    if next_key is not None:
        nav.append(f'<a class="button" id="next" href="{path}?'
                   f'{e(urlencode({**keep, cursor: next_key}))}">next page →</a>')
    return " ".join(nav)
