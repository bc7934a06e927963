"""docs/versioning.md's example runs as written, and the page names what the code does
(the built-in skill table, the commands and the events)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "versioning.md").read_text(encoding="utf-8")


def test_the_migration_example_runs_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC, re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/versioning.md", "exec"), {})


def test_the_page_names_the_commands_and_events() -> None:
    for name in ("claimfsm diagram --version", "check-compat", "--on-version continue",
                 "sessions --version", "Migrated", "VersionContinued", "VERSION_MISMATCH",
                 "MIGRATION_FAILED", "SKILL_VERSIONS", "SKILL_FILES", "unknown"):
        assert name in DOC, name
