"""The library's one JSON encoder.

orjson keeps keys in insertion order and writes compact bytes, so the same value always
gives byte-identical output: envelopes, revisions and records rely on it.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps"]


def dumps(obj: Any) -> bytes:
    """The project's one JSON encoder (orjson, insertion-ordered keys, compact)."""
    return orjson.dumps(obj)
