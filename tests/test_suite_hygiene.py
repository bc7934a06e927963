"""The test suite's own rules, checked by reading it: a missing component cannot pass CI
by skipping, a property test never fails on a busy machine's clock, and no test skips
because it runs as root (CI does)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import components
from tests.support.components import need_module

TESTS = Path(__file__).resolve().parent


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(TESTS.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _called(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    return getattr(func, "id", "")


def test_no_test_skips_a_missing_module_past_require_all() -> None:
    # ``pytest.importorskip`` skips even under CLAIMFSM_REQUIRE_ALL=1: need_module fails there.
    found = [f"{path.relative_to(TESTS)}:{node.lineno}" for path, tree in _modules()
             for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _called(node) == "importorskip"]
    assert found == []


def test_need_module_skips_or_fails_by_require_all(monkeypatch: pytest.MonkeyPatch) -> None:
    assert need_module("json", "dev").dumps([]) == "[]"
    monkeypatch.setattr(components, "REQUIRE_ALL", False)
    with pytest.raises(pytest.skip.Exception, match="no claimfsm_no_such_module"):
        need_module("claimfsm_no_such_module", "dev")
    monkeypatch.setattr(components, "REQUIRE_ALL", True)
    with pytest.raises(pytest.fail.Exception, match="CLAIMFSM_REQUIRE_ALL=1"):
        need_module("claimfsm_no_such_module", "dev")


def _has_deadline(call: ast.expr) -> bool:
    return (isinstance(call, ast.Call) and _called(call) == "settings"
            and any(k.arg == "deadline" for k in call.keywords))


def test_every_property_test_sets_its_deadline() -> None:
    # Hypothesis's default deadline (200 ms an example) fails a test when the machine is
    # busy, not when the code is wrong: each property test says what it allows.
    missing: list[str] = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                given = any(_called(d) == "given" for d in node.decorator_list
                            if isinstance(d, ast.Call))
                if given and not any(_has_deadline(d) for d in node.decorator_list):
                    missing.append(f"{path.relative_to(TESTS)}::{node.name}")
            elif (isinstance(node, ast.Assign) and not _has_deadline(node.value)
                  and any(isinstance(t, ast.Attribute) and t.attr == "settings"
                          for t in node.targets)):  # a state machine's TestCase.settings
                missing.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert missing == []


def test_no_test_skips_for_running_as_root() -> None:
    # CI runs as root: a test that skips there never runs. tests/support/privileges.py
    # runs such a check in a child that file modes bind instead.
    found = [f"{path.relative_to(TESTS)}:{node.lineno}" for path, tree in _modules()
             for node in ast.walk(tree)
             if isinstance(node, ast.Call) and _called(node) == "skipif"
             and "geteuid" in ast.unparse(node)]
    assert found == []


def _is_connect(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "connect" and ast.unparse(node.func.value) == "sqlite3")


def test_no_test_leaves_a_sqlite_connection_to_the_collector() -> None:
    # Python 3.11's sqlite3 connection sits in a cycle with its statement cache: one that
    # is never closed closes at some later collection and, as the file's last connection,
    # deletes the WAL under a store opened since. ``with connect(...)`` commits but does
    # not close; a chained ``connect(...).execute`` never closes. tests/support/peek.py
    # reads a file and closes; ``with closing(connect(...)) as c, c:`` writes and closes.
    found: list[str] = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_connect(node.value):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}")
            elif isinstance(node, ast.withitem) and _is_connect(node.context_expr):
                found.append(f"{path.relative_to(TESTS)}:{node.context_expr.lineno}")
    assert found == []
