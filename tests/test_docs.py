"""Docs that follow the code: the CLI reference, the error codes and the links between pages."""

from __future__ import annotations

import re
from pathlib import Path

from claimfsm import ErrorCode
from claimfsm.cli.docs import render, render_errors
from claimfsm.cli.main import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent


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
    assert rows["| `INTERRUPTED`"] == ["130", "- |"]
    assert rows["| `NO_PLANS`"] == ["1", "- |"]


def test_relative_links_in_readme_and_docs_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
