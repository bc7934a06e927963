"""Keeps docs/ui.md's API reference equal to the OpenAPI document: the text between the
``<!-- api:begin -->`` and ``<!-- api:end -->`` markers is generated
(``python -m claimfsm.ui.docs docs/ui.md`` rewrites it; a test fails when they disagree)."""

from __future__ import annotations

import sys
from pathlib import Path

from claimfsm.ui.openapi import markdown

__all__ = ["BEGIN", "END", "with_reference"]

BEGIN, END = "<!-- api:begin -->", "<!-- api:end -->"


def with_reference(text: str) -> str:
    """``text`` with the generated reference between the markers."""
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{markdown()}{END}{tail}"


if __name__ == "__main__":  # pragma: no cover - the generator entry point
    path = Path(sys.argv[1])
    path.write_text(with_reference(path.read_text()))
