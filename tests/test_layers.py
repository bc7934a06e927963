"""The one-way import rules between the parts, checked on the AST of every module.

Every ``import`` counts, at the top of a module or inside a function (a lazy import is
still an arrow). docs/architecture.md draws the same table.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The repository's folders and the package names they install as (pyproject.toml).
FOLDERS = {"fsm": "claimfsm", "skills": "claimfsm.skills", "state": "claimfsm.state",
           "fixtures": "claimfsm.fixtures"}
PACKAGES = ("fsm", "skills", "state")
FSM_TOOLS = ("cli", "replay", "testing", "eval", "bench", "batch", "ui", "observe")
BASE = {"base"}
SKILLS = {"skills", "skills.analysis"}

# part -> the parts it may import (besides itself). "front" is ``claimfsm/__init__``: the
# front door re-exports from below it, and nothing inside the library imports it but the
# benchmark's user-written workflow.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "state": BASE,
    "skills": BASE | {"skills.analysis"},
    "skills.analysis": BASE,
    "engine": BASE | SKILLS | {"state"},
    "replay": BASE | SKILLS | {"engine", "state"},
    "testing": BASE | SKILLS | {"engine", "replay", "state"},
    "eval": BASE | SKILLS | {"engine", "state"},
    # The benchmark's workflow is docs/api.md's example verbatim, written as a user writes
    # it: through the front door.
    "bench": BASE | SKILLS | {"engine", "replay", "testing", "state", "front", "observe"},
    # Traces, metrics and logs of a running engine: used by the tools that run one.
    "observe": BASE | SKILLS | {"engine", "state"},
    "batch": BASE | SKILLS | {"engine", "state", "observe"},
    "ui": BASE | SKILLS | {"engine", "replay", "state", "observe"},
    "cli": BASE | SKILLS | {"engine", "replay", "testing", "eval", "bench", "batch", "ui",
                            "state", "observe"},
    "front": BASE | SKILLS | {"engine", "replay", "state"},
    "fixtures": set(),
}


def part_of(module: str) -> str | None:
    """The part a dotted module name belongs to, or None outside the project.

    The old top-level names (``fsm``, ``skills``, ``state``) are their own part, which no
    part may import: the library owns one import name.
    """
    head, *rest = module.split(".")
    if head in PACKAGES:
        return "old-name"
    if head != "claimfsm":
        return None
    first = rest[0] if rest else ""
    if first == "_base":
        return "base"
    if first == "skills":
        return "skills.analysis" if rest[1:2] == ["analysis"] else "skills"
    if first in ("state", "engine", "fixtures", *FSM_TOOLS):
        return first
    return "front"


def imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every module an AST imports (``from a import b`` names both ``a`` and ``a.b``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def violations(module: str, source: str) -> list[str]:
    """The forbidden imports in one module's source."""
    here = part_of(module)
    assert here is not None
    found = []
    for line, target in imported(ast.parse(source)):
        there = part_of(target)
        if there is None or there == here:
            continue
        if there not in ALLOWED[here]:
            found.append(f"{module}:{line} ({here}) imports {target} ({there})")
    return found


def project_modules() -> Iterator[tuple[str, Path]]:
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "sessions" in path.parts:  # fixtures/sessions/make_sessions.py: a script
                continue
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            dotted = ".".join((package, *rel))
            yield dotted.removesuffix(".__init__"), path


def test_no_module_imports_against_the_arrows() -> None:
    found = [v for mod, path in project_modules()
             for v in violations(mod, path.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.parametrize(("module", "source"), [
    ("claimfsm.engine.driver", "from claimfsm.replay.write import Recorder"),
    ("claimfsm.engine.machine", "def f():\n    import claimfsm.cli.main\n"),
    ("claimfsm.replay.runner", "from claimfsm.cli import main"),
    ("claimfsm.eval.run", "from claimfsm.bench import run"),
    ("claimfsm.batch.worker", "from claimfsm.cli.common import engine"),
    ("claimfsm.engine.driver", "from claimfsm.batch import run_batch"),
    ("claimfsm.skills.parse_claim", "from claimfsm.engine.driver import Driver"),
    ("claimfsm.skills.analysis.text", "from claimfsm.skills.envelope import Envelope"),
    ("claimfsm.state.memory", "import claimfsm.skills.envelope"),
    ("claimfsm._base.lazy", "from claimfsm.state.model import SessionState"),
    ("claimfsm.engine.driver", "from claimfsm import Engine"),
    ("claimfsm.engine.driver", "from fsm.machine import Machine"),
    ("claimfsm.cli.main", "import skills.envelope"),
])
def test_a_forbidden_import_is_caught(module: str, source: str) -> None:
    assert violations(module, source)


@pytest.mark.parametrize(("module", "source"), [
    ("claimfsm.cli.main", "from claimfsm.eval import run\nfrom claimfsm.bench import cases"),
    ("claimfsm.testing.toolkit", "from claimfsm.replay.record import Record"),
    ("claimfsm.engine.driver", "from claimfsm.state.model import SessionState\nimport orjson"),
    ("claimfsm.state.model", "from claimfsm._base.lazy import lazy_exports"),
    ("claimfsm", "from claimfsm.engine.api import define_machine"),
])
def test_an_allowed_import_passes(module: str, source: str) -> None:
    assert violations(module, source) == []


def test_no_top_module_is_named_after_a_sibling_concern() -> None:
    prefixes = ("cli_", "eval_", "train_", "replay_", "record", "bench", "testing_",
                "sqlite_", "query_", "claim_")
    # stance_judge is one of the seven skills, kept at the top where readers look first.
    tops = [p for pkg in PACKAGES for p in (ROOT / pkg).glob("*.py")]
    named = [p.name for p in tops if p.stem.startswith(prefixes)
             or (p.stem.startswith("stance_") and p.stem != "stance_judge")]
    assert named == []


def test_every_subpackage_says_what_it_is_and_exports_its_names() -> None:
    for init in [p for pkg in FOLDERS for p in (ROOT / pkg).rglob("__init__.py")]:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{init.relative_to(ROOT)} has no docstring"
        if init.parent.name != "fixtures":
            names = {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                     if isinstance(t, ast.Name)}
            assert "__all__" in names, f"{init.relative_to(ROOT)} has no __all__"
