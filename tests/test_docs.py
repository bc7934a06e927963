"""Docs that follow the code: the CLI reference and the links between pages."""

from __future__ import annotations

import re
from pathlib import Path

from claimfsm.cli.docs import render
from claimfsm.cli.main import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_matches_the_cli() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == render(main), "regenerate: python -m claimfsm.cli.docs > docs/cli.md"


def test_every_command_is_in_the_reference() -> None:
    text = render(main)
    for name in COMMANDS:
        assert f"## `claimfsm {name}`" in text


def test_relative_links_in_readme_and_docs_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
