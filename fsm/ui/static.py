"""The stylesheet and the pages' scripts, shipped as package data under ``assets/``
(``inspector.css``, ``sessions.js``, ``session.js``, ``review.js``, ``lineage.js``,
``replay.js``) and inlined into
every page (the CSS into reports too), so the UI works offline and a report is one file.

They are read through :mod:`importlib.resources`, not a path next to this file, so they
load from wherever the package is installed (a wheel, a zip, an editable checkout).
"""

from __future__ import annotations

import functools
import importlib.resources

from claimfsm._base.errors import BadInput

__all__ = ["ASSETS", "asset"]

#: The packaged assets, by file name (pyproject.toml's package data must ship each one).
ASSETS = ("inspector.css", "sessions.js", "session.js", "review.js", "lineage.js",
          "replay.js")


@functools.cache
def asset(name: str) -> str:
    """The text of the packaged asset ``name`` (one of :data:`ASSETS`), read on first use
    and cached: every page inlines it, and the file does not change under a running app."""
    if name not in ASSETS:
        raise BadInput(f"no UI asset {name!r} (known: {', '.join(ASSETS)})")
    return (importlib.resources.files("claimfsm.ui") / "assets" / name).read_text(
        encoding="utf-8")
