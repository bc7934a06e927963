"""Docs that follow the code: the CLI reference, the error codes, the links between pages,
the Python snippets of README.md, docs/api.md and docs/async.md (run as written, from the
front door), the import table of docs/architecture.md and the module table of
docs/changes.md.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from claimfsm import ErrorCode
from claimfsm.cli.docs import render, render_errors
from claimfsm.cli.main import COMMANDS, main
from tests.test_layers import ALLOWED

ROOT = Path(__file__).resolve().parent.parent
# The pages whose ```python blocks run as written and import only from the front door.
SNIPPET_PAGES = ("README.md", "docs/api.md", "docs/async.md")
# The folders whose modules docs/changes.md accounts for, and their import names.
PACKAGE_FOLDERS = {"fsm": "claimfsm", "skills": "claimfsm.skills", "state": "claimfsm.state"}


def test_cli_reference_matches_the_cli() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == render(main), "regenerate: python -m claimfsm.cli.docs > docs/cli.md"


def test_every_command_is_in_the_reference() -> None:
    text = render(main)
    for name in COMMANDS:
        assert f"## `claimfsm {name}`" in text


def test_error_codes_page_matches_the_codes() -> None:
    committed = (ROOT / "docs" / "errors.md").read_text()
    assert committed == render_errors(), (
        "regenerate: python -m claimfsm.cli.docs errors > docs/errors.md")


def test_every_code_is_on_the_errors_page_once_with_its_statuses() -> None:
    rows = {line.split(" | ")[0]: line.split(" | ")[2:]
            for line in render_errors().splitlines() if line.startswith("| `")}
    assert len(rows) == len(ErrorCode)
    assert rows["| `STORE_BUSY`"] == ["2", "503 |"]
    assert rows["| `INTERRUPTED`"] == ["130", "503 |"]  # every code has a status now
    assert rows["| `NO_PLANS`"] == ["1", "422 |"]


def test_relative_links_in_readme_and_docs_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


# --- the Python snippets ----------------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """A ```python block; ``output`` is the ```text block right after it, if any: what
    the block prints. ``tag`` is the name of an ``<!-- api-example: NAME -->`` marker."""

    page: str
    n: int
    code: str
    output: str | None
    tag: str | None

    @property
    def name(self) -> str:
        return f"{self.page}#{self.n}" + (f"-{self.tag}" if self.tag else "")


BLOCK = re.compile(
    r"(?:<!-- api-example: (?P<tag>[\w-]+) -->\n)?```python\n(?P<code>.*?)```"
    r"(?:\n\n```text\n(?P<output>.*?)```)?",
    re.S,
)


def snippets(page: str) -> list[Snippet]:
    text = (ROOT / page).read_text(encoding="utf-8")
    return [Snippet(page, n, m["code"], m["output"], m["tag"])
            for n, m in enumerate(BLOCK.finditer(text), start=1)]


ALL_SNIPPETS = [s for page in SNIPPET_PAGES for s in snippets(page)]

def project_imports(code: str) -> list[str]:
    """Every import of claimfsm (or of its old names) a snippet makes, as written."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return [m for m in found if m.split(".")[0] in ("claimfsm", "fsm", "skills", "state")]


def test_readme_and_api_have_snippets() -> None:
    pages = {s.page for s in ALL_SNIPPETS}
    assert pages == set(SNIPPET_PAGES)
    assert any(s.output for s in ALL_SNIPPETS if s.page == "README.md")


@pytest.mark.parametrize("snippet", ALL_SNIPPETS, ids=lambda s: s.name)
def test_a_snippet_imports_only_from_the_front_door(snippet: Snippet) -> None:
    imports = project_imports(snippet.code)
    assert set(imports) <= {"claimfsm"}, f"{snippet.name} imports {imports}"


@pytest.mark.parametrize("snippet", ALL_SNIPPETS, ids=lambda s: s.name)
def test_a_snippet_runs_as_written(snippet: Snippet, tmp_path: Path) -> None:
    # A reader runs a page's blocks in order, so a block runs after the ones above it on
    # its page, each time in a fresh interpreter, from an empty directory and in isolated
    # mode (-I): only what is installed imports, nothing from the checkout's cwd.
    before = [s.code for s in snippets(snippet.page) if s.n < snippet.n]
    script = tmp_path / "snippet.py"
    script.write_text("\n\n".join([*before, snippet.code]), encoding="utf-8")
    done = subprocess.run([sys.executable, "-I", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{snippet.name} failed:\n{done.stderr}"
    printed = done.stdout
    if before:  # what the blocks above printed comes first
        earlier = "".join(s.output or "" for s in snippets(snippet.page) if s.n < snippet.n)
        assert printed.startswith(earlier)
        printed = printed[len(earlier):]
    # What a block prints is on the page, in the ```text block right after it.
    assert printed == (snippet.output or ""), f"{snippet.name} printed:\n{printed}"


# --- docs/architecture.md: the import table is tests/test_layers.py's ALLOWED --------------


def test_architecture_import_table_is_the_layer_rules() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("| part | modules | may import |\n|---|---|---|\n", 1)[1].split("\n\n")[0]
    documented: dict[str, set[str]] = {}
    for row in table.splitlines():
        part, _, may = (cell.strip() for cell in row.strip("|").split(" | "))
        documented[part.strip("`")] = (set() if may == "nothing"
                                       else set(re.findall(r"`([\w.]+)`", may)))
    assert documented == ALLOWED


# --- docs/changes.md: every module of 0.1.0 and where it went ----------------------------

# fsm's subpackages kept their place under claimfsm in 0.2.0; fsm's other modules (its
# top, the engine core) went to claimfsm.engine.
FSM_SUBPACKAGES = ("cli", "replay", "testing", "eval", "bench", "batch", "ui")


def package_modules() -> set[str]:
    """The dotted names of every module of the package, from the folders."""
    names = set()
    for folder, package in PACKAGE_FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            names.add(".".join((package, *rel)).removesuffix(".__init__"))
    return names


@dataclass(frozen=True)
class Version:
    """One ``## VERSION`` section of docs/changes.md: its table of moved modules
    (old, new) and its new modules."""

    name: str
    text: str
    moved: tuple[tuple[str, str], ...]
    new: frozenset[str]


def versions() -> list[Version]:
    """docs/changes.md's version sections, newest first."""
    found = []
    text = (ROOT / "docs" / "changes.md").read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        moved: list[tuple[str, str]] = []
        new: set[str] = set()
        for sub in re.split(r"^### ", section, flags=re.M)[1:]:
            title = sub.split("\n", 1)[0]
            if title.startswith("Every module"):
                moved += re.findall(r"^\| `([\w.]+)` \| `([\w.]+)` \|$", sub, re.M)
            elif title.startswith("New modules"):
                new |= set(re.findall(r"^\| `([\w.]+)` \|", sub, re.M))
        found.append(Version(section.split("\n", 1)[0].strip(), section, tuple(moved),
                             frozenset(new)))
    return found


def renamed_in_0_2_0(old: str) -> str:
    """Where a 0.1.0 module went in 0.2.0: fsm's top modules into claimfsm.engine (fsm
    itself became the front door), everything else under claimfsm as it was."""
    head, *rest = old.split(".")
    if head == "fsm":
        if len(rest) == 1 and rest[0] not in FSM_SUBPACKAGES:
            return f"claimfsm.engine.{rest[0]}"
        return ".".join(("claimfsm", *rest))
    return ".".join(("claimfsm", head, *rest))


def test_changes_lists_every_module_of_0_1_0_with_its_new_name() -> None:
    release = next(v for v in versions() if v.name == "0.2.0")
    olds = [old for old, _ in release.moved]
    assert len(olds) == len(set(olds)), "a module is listed twice in docs/changes.md"
    stated = re.search(r"All (\d+) modules of 0\.1\.0", release.text)
    assert stated and int(stated.group(1)) == len(olds)
    wrong = [(old, now) for old, now in release.moved if now != renamed_in_0_2_0(old)]
    assert wrong == []


def test_changes_accounts_for_every_module_of_the_package() -> None:
    # Every module is where some version's table moved a module to, or new in some
    # version; a row's new name is a module today unless a later table moved it again.
    every = versions()
    moved = [row for v in every for row in v.moved]
    new = set().union(*(v.new for v in every))
    modules = package_modules()
    arrived = {now for _, now in moved}
    left = {old for old, _ in moved}
    missing = sorted(modules - arrived - new)
    assert missing == [], ("docs/changes.md does not list these modules: add each to the "
                           "table of moves if it existed before, else to 'New modules'")
    stale = sorted(now for now in arrived | new if now not in modules and now not in left)
    assert stale == [], "docs/changes.md names modules that are gone and says nowhere where"


def test_pages_do_not_name_the_old_import_paths() -> None:
    # docs/changes.md names them on purpose; docs/cli.md is generated.
    old = re.compile(r"(?:^|`)\s*(?:from (?:fsm|skills|state)(?:\.\w+)* import |import "
                     r"(?:fsm|skills|state)\b)|python -m (?:fsm|skills|state)\b", re.M)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "docs" / "examples").glob("*.py"))]
    found = [f"{page.relative_to(ROOT)}: {m.group(0)}" for page in pages
             if page.name not in ("changes.md", "cli.md")
             for m in old.finditer(page.read_text(encoding="utf-8"))]
    assert found == []
