"""The one-package layout: pyproject.toml's folder mapping and package list cover every
package folder, the data commands read ships, and nothing installs under a second name.

(`.ci/wheel` builds the wheel and uses it from a fresh venv; these checks run in
`make test` without building anything.)
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = CONFIG["tool"]["setuptools"]
PACKAGE_DIR: dict[str, str] = SETUPTOOLS["package-dir"]


def folder_of(package: str) -> Path:
    """Where a listed package's files live, by the longest mapped prefix."""
    best = max((p for p in PACKAGE_DIR if package == p or package.startswith(p + ".")),
               key=len)
    rest = package[len(best):].lstrip(".")
    return ROOT / PACKAGE_DIR[best] / Path(*rest.split(".")) if rest else ROOT / PACKAGE_DIR[best]


def test_every_mapped_name_is_under_claimfsm() -> None:
    assert all(p == "claimfsm" or p.startswith("claimfsm.") for p in PACKAGE_DIR)
    assert all(p == "claimfsm" or p.startswith("claimfsm.") for p in SETUPTOOLS["packages"])


def test_the_package_list_is_every_package_folder() -> None:
    # The mapped folders are siblings at the top of the repository, none inside another.
    assert len({Path(f).parts[0] for f in PACKAGE_DIR.values()}) == len(PACKAGE_DIR)
    found = set()
    for package, folder in PACKAGE_DIR.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            # fixtures/sessions holds the recordings' generator script, not a package
            if "sessions" not in rel:
                found.add(".".join((package, *rel)))
    listed = set(SETUPTOOLS["packages"])
    assert found - listed == set(), "package folders missing from pyproject's packages"
    assert listed - found == set(), "listed packages without a folder"
    assert all((folder_of(p) / "__init__.py").is_file() for p in listed)


def test_the_data_commands_read_is_package_data() -> None:
    data: dict[str, list[str]] = SETUPTOOLS["package-data"]
    shipped = {f.relative_to(ROOT) for package, globs in data.items()
               for pattern in globs for f in folder_of(package).glob(pattern)}
    needed = [Path("fixtures/demo_claims.json"), Path("fixtures/corpus/demo_docs.jsonl"),
              Path("fixtures/corpus/demo_kb.jsonl"), Path("fsm/py.typed"),
              *(p.relative_to(ROOT) for p in (ROOT / "fixtures/sessions").glob("*.jsonl")),
              *(p.relative_to(ROOT) for p in (ROOT / "skills/cards").glob("*.md")),
              *(p.relative_to(ROOT) for p in (ROOT / "skills/prompts").glob("*.md"))]
    assert [p for p in needed if p not in shipped] == []


def test_the_entry_points_name_the_package() -> None:
    project = CONFIG["project"]
    assert project["scripts"] == {"claimfsm": "claimfsm.cli:main"}
    assert project["entry-points"]["pytest11"] == {"claimfsm": "claimfsm.testing.plugin"}


def test_the_demo_data_is_read_from_the_package() -> None:
    import importlib.resources

    from claimfsm.engine.runtime import DEMO_DOCS, FIXTURES

    assert Path(str(importlib.resources.files("claimfsm.fixtures"))) == FIXTURES
    assert DEMO_DOCS.is_file() and (FIXTURES / "demo_claims.json").is_file()
