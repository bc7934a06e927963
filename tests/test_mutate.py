"""`make mutate`'s targets still name what is there: a renamed function or a moved test
file would otherwise drop out of the mutation run without a word (mutmut matches names
by pattern, and a pattern that matches nothing is not an error for a whole target)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.support.mutate import DATA, LAYOUT, ROOT, TARGETS, Target, stage

FOLDERS = {"claimfsm/" + "/".join(p for p in into.split("/")[1:]): folder
           for folder, into in LAYOUT.items()}


def source_of(staged: str) -> Path:
    """The checkout's file for a staged package path (``claimfsm/state/x.py``)."""
    for prefix, folder in FOLDERS.items():
        if staged.startswith(prefix + "/"):
            return ROOT / folder / staged.removeprefix(prefix + "/")
    return ROOT / "fsm" / staged.removeprefix("claimfsm/")


def defined(path: Path) -> set[str]:
    """``name`` and ``Class.name`` of every function defined at the top of a module or
    of its classes (what mutmut mutates)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.ClassDef):
            found |= {f"{node.name}.{f.name}" for f in node.body
                      if isinstance(f, ast.FunctionDef)}
    return found


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_named_function_exists(name: str) -> None:
    target = TARGETS[name]
    for (module, functions), staged in zip(target.functions.items(), target.files(),
                                           strict=True):
        path = source_of(staged)
        assert path.is_file(), f"{name}: {module} is not {path.relative_to(ROOT)}"
        missing = set(functions) - defined(path)
        assert not missing, f"{name}: {module} has no {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_test_path_exists(name: str) -> None:
    for test in TARGETS[name].tests:
        assert (ROOT / test.split("::")[0]).is_file(), f"{name}: no {test}"


def test_patterns_spell_mutmut_s_names() -> None:
    target = Target(functions={"engine.driver": ("Driver._step", "iso")}, tests=())
    assert target.files() == ["claimfsm/engine/driver.py"]
    assert target.globs() == ["claimfsm.engine.driver.x\u01c1Driver\u01c1_step__mutmut_*",
                              "claimfsm.engine.driver.x_iso__mutmut_*"]


def test_the_staging_tree_is_laid_out_as_the_package_installs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.support.mutate.WORK", tmp_path)
    where = stage("limits", TARGETS["limits"])
    for staged in TARGETS["limits"].files():
        assert (where / staged).read_bytes() == source_of(staged).read_bytes()
    assert (where / "claimfsm" / "__init__.py").is_file()
    assert all((where / folder).is_dir() for folder in (*DATA, "tests"))
    settings = tomllib.loads((where / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert settings["only_mutate"] == TARGETS["limits"].files()
    assert settings["pytest_add_cli_args_test_selection"] == list(TARGETS["limits"].tests)
    assert "claimfsm-mutate" in (where / "tests" / "conftest.py").read_text()
    assert "claimfsm-mutate" not in (ROOT / "tests" / "conftest.py").read_text()


def test_make_mutate_runs_the_targets_with_the_pinned_tool() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "\nmutate: install\n" in makefile and "-m tests.support.mutate" in makefile
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert [dep for dep in extras["mutate"] if dep.startswith("mutmut")] == ["mutmut==3.8.1"]
