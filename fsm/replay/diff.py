"""The first difference between two JSON values, named by its path (``d.plans[0].q[1]``)."""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["ABSENT", "first_diff", "join_path", "short"]

#: Stands for a key or item one side does not have.
ABSENT = "<absent>"

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def join_path(path: str, key: str | int) -> str:
    """``path`` extended by a key (``.key`` or ``["odd key"]``) or an index (``[3]``)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def first_diff(expected: Any, actual: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """``(path, expected, actual)`` of the first difference, depth first in the expected
    value's key order; ``None`` when both serialise alike.

    Types count (``1`` differs from ``1.0`` and from ``true``), and so does key order,
    because records compare serialised bytes.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            sub = join_path(path, key)
            if key not in actual:
                return sub, value, ABSENT
            found = first_diff(value, actual[key], sub)
            if found is not None:
                return found
        for key, value in actual.items():
            if key not in expected:
                return join_path(path, key), ABSENT, value
        if list(expected) != list(actual):
            return path or "(root)", f"keys {list(expected)}", f"keys {list(actual)}"
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (exp, act) in enumerate(zip(expected, actual, strict=False)):
            found = first_diff(exp, act, join_path(path, i))
            if found is not None:
                return found
        if len(expected) != len(actual):
            n = min(len(expected), len(actual))
            return (join_path(path, n), expected[n] if n < len(expected) else ABSENT,
                    actual[n] if n < len(actual) else ABSENT)
        return None
    if type(expected) is not type(actual) or expected != actual:
        return path or "(root)", expected, actual
    return None


def short(value: Any, width: int = 160) -> str:
    """A divergence's value for people: a string as it is, anything else as compact JSON,
    cut to ``width`` characters."""
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= width else text[: width - 3] + "..."
