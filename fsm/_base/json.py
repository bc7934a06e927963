"""The library's one JSON encoder.

orjson keeps keys in insertion order and writes compact bytes, so the same value always
gives byte-identical output: envelopes, revisions and records rely on it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

__all__ = ["dumps", "figures_main"]


def dumps(obj: Any) -> bytes:
    """The project's one JSON encoder (orjson, insertion-ordered keys, compact)."""
    return orjson.dumps(obj)


def figures_main(run: Callable[[], Any], argv: list[str] | None = None) -> None:
    """A benchmark script's entry point: ``run()``'s figures as indented JSON, to the file
    of ``--json FILE`` (its folder checked before the run, so a long run never ends in a
    path error) or to stdout."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[1]) if len(args) == 2 and args[0] == "--json" else None
    if target is not None and not target.parent.is_dir():
        sys.exit(f"error: NOT_FOUND: --json: no folder {target.parent}")
    figures = orjson.dumps(run(), option=orjson.OPT_INDENT_2)
    if target is not None:
        target.write_bytes(figures)
    else:
        print(figures.decode())
