"""Every error code the library's source uses, found by reading the source.

A code is an UPPER_SNAKE string literal where the source gives a code: a ``code=``,
``problem=`` or ``codes=`` argument; an assignment to ``code`` or ``default_code`` or to a
name holding ``CODES``; a ``"code"`` key of a dict; a comparison with ``.code``; a
positional argument of the calls that take one (``Envelope.error``/``retry``, the CLI's
``fail``, the UI's ``_error_response``, the executor's ``_Failure``, fsck's ``broken``...);
the ``error=(code, msg)`` of a learned judge; the ``(code, detail)`` a ``*problem``
function returns. ``tests/test_errors.py`` checks each one against ``ErrorCode``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["codes_in_source", "codes_in_use", "members_named"]

_CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
_CALLS = {"error", "retry", "fail", "_stop", "_error_response", "_Failure", "ToolFailure",
          "DatasetError", "ModelError", "broken", "_skip"}
_KEYWORDS = {"code", "problem", "codes"}
_NAMES = {"code", "default_code"}
# The store contract suites (shipped so other backends can run them) store made-up
# states, such as an error ``{"code": "X"}``: test data, not codes the library uses.
_NOT_LIBRARY = {"contract.py", "contract_catalog.py"}


def _literals(node: ast.AST | None) -> Iterator[str]:
    """The code-like string literals ``node`` is, or holds (a tuple, a set, a
    ``frozenset({...})``, either side of ``a or b``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if _CODE.match(node.value):
            yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for item in node.elts:
            yield from _literals(item)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _literals(value)
    elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("frozenset", "set"):
        for arg in node.args:
            yield from _literals(arg)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return getattr(node, "id", "")


def _found(node: ast.AST, function: str) -> Iterator[str]:
    if isinstance(node, ast.keyword):
        if node.arg in _KEYWORDS:
            yield from _literals(node.value)
        elif node.arg == "error" and isinstance(node.value, ast.Tuple) and node.value.elts:
            yield from _literals(node.value.elts[0])
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = _name(target)
            if name in _NAMES or "CODES" in name:
                yield from _literals(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                for part, value in zip(target.elts, node.value.elts, strict=False):
                    if _name(part) in _NAMES:
                        yield from _literals(value)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "code":
                yield from _literals(value)
    elif isinstance(node, ast.Compare) and _name(node.left) == "code":
        for right in node.comparators:
            yield from _literals(right)
    elif isinstance(node, ast.Call) and _name(node.func) in _CALLS:
        for arg in node.args[:3]:
            yield from _literals(arg)
    elif (isinstance(node, ast.Return) and "problem" in function
          and isinstance(node.value, ast.Tuple) and node.value.elts):
        yield from _literals(node.value.elts[0])


def _walk(node: ast.AST, function: str) -> Iterator[tuple[str, int]]:
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, ast.FunctionDef) else function
        for code in _found(child, inner):
            yield code, getattr(child, "lineno", 0)
        yield from _walk(child, inner)


def codes_in_source(source: str) -> dict[str, list[int]]:
    """Each code ``source`` uses, with the lines that use it."""
    found: dict[str, list[int]] = {}
    for code, line in _walk(ast.parse(source), ""):
        found.setdefault(code, []).append(line)
    return found


def codes_in_use(*roots: Path) -> dict[str, list[str]]:
    """Each code used under ``roots`` (the library's folders), with ``path:line`` of
    every use."""
    found: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.name in _NOT_LIBRARY:
                continue
            for code, lines in codes_in_source(path.read_text(encoding="utf-8")).items():
                where = path.relative_to(root.parent)
                found.setdefault(code, []).extend(f"{where}:{n}" for n in lines)
    return found


def members_named(*roots: Path, skip: tuple[str, ...] = ()) -> set[str]:
    """The ``ErrorCode`` members the source under ``roots`` names as ``ErrorCode.NAME``
    (files whose path ends with one of ``skip`` left out)."""
    named: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            if path.as_posix().endswith(skip):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "ErrorCode" and _CODE.match(node.attr)):
                    named.add(node.attr)
    return named
