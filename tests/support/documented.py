"""What the documentation promises, read from it, so that a test checks the code against
the docs instead of against the code's own constants (a test that takes its expected
list from the constant it guards passes whatever the constant says)."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DOCS", "documented_limits", "documented_tool_slice"]

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def documented_tool_slice() -> tuple[str, ...]:
    """The fields ``rb=tools`` restores, as docs/concepts.md lists them in its rollback
    table (the row of ``s=error, rb=tools``)."""
    text = (DOCS / "concepts.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `s=error, rb=tools` |"))
    found = re.search(r"the tool slice \(([^)]*)\)", row)
    assert found is not None, f"docs/concepts.md: no tool slice list in {row!r}"
    fields = tuple(re.findall(r"`([a-z_]+)`", found.group(1)))
    assert fields, row
    return fields


_UNITS = {"KiB": 1024, "MiB": 1024 * 1024}


def documented_limits() -> dict[str, int]:
    """Each limit constant docs/limits.md names in its table's default column, with the
    number written there (``1,000 characters (`MAX_CLAIM_CHARS`...)``, ``512 KiB
    (`MAX_INPUT_BYTES`)``, ``2^53 (`MAX_INT`)``)."""
    text = (DOCS / "limits.md").read_text()
    out: dict[str, int] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not line.startswith("|"):
            continue
        names = re.findall(r"`(MAX_[A-Z_]+)", cells[1])
        power = re.match(r"2\^(\d+)", cells[1])
        number = re.match(r"([\d,]+)\s*(KiB|MiB)?", cells[1])
        if not names or not (power or number):
            continue
        if power:
            value = 2 ** int(power.group(1))
        else:
            assert number is not None
            value = int(number.group(1).replace(",", "")) * _UNITS.get(number.group(2) or "", 1)
        out[names[0]] = value
    return out
