"""Field-level differences between two revisions: what a step (or several) changed."""

from __future__ import annotations

from typing import Any

from claimfsm.replay.diff import join_path

__all__ = ["Change", "diff_values"]

#: One difference: ``{"path", "op": "added"|"removed"|"changed", "before", "after"}``.
Change = dict[str, Any]

_MAX = 2000  # a diff of two unrelated revisions stays readable


def diff_values(before: Any, after: Any, path: str = "") -> list[Change]:
    """Every leaf that differs between two JSON values, depth first; lists compare item
    by item (an appended item is ``added``). At most 2,000 changes."""
    out: list[Change] = []
    _walk(before, after, path, out)
    return out[:_MAX]


def _walk(a: Any, b: Any, path: str, out: list[Change]) -> None:
    if len(out) >= _MAX:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key, value in a.items():
            sub = join_path(path, key)
            if key not in b:
                out.append({"path": sub, "op": "removed", "before": value, "after": None})
            else:
                _walk(value, b[key], sub, out)
        for key, value in b.items():
            if key not in a:
                out.append({"path": join_path(path, key), "op": "added", "before": None,
                            "after": value})
        return
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(x, y, join_path(path, i), out)
        for i in range(len(b), len(a)):
            out.append({"path": join_path(path, i), "op": "removed", "before": a[i],
                        "after": None})
        for i in range(len(a), len(b)):
            out.append({"path": join_path(path, i), "op": "added", "before": None,
                        "after": b[i]})
        return
    if type(a) is not type(b) or a != b:
        out.append({"path": path or "(root)", "op": "changed", "before": a, "after": b})
