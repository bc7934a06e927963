"""The UI's SVG diagram marks a wait state without relying on colour: a dashed outline,
the label "waits for input" where a skill's name would be, and its input model in the
box's tooltip; other states keep their solid outline and their skill's name."""

from __future__ import annotations

import re

from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.ui.diagram import diagram_svg


def _box(svg: str, state: str) -> str:
    found = re.search(rf'<g class="[^"]*" data-state="{state}">.*?</g>', svg)
    assert found is not None, state
    return found.group(0)


def test_the_wait_state_is_dashed_and_labelled() -> None:
    svg = diagram_svg(DEFAULT_MACHINE)
    review = _box(svg, "REVIEW")
    assert 'class="state wait"' in review and "stroke-dasharray" in review
    assert ">waits for input</text>" in review
    assert "<title>REVIEW: waits for ReviewInput</title>" in review
    for state in ("PARSE_CLAIM", "RETRIEVAL", "VERIFY", "DONE"):
        box = _box(svg, state)
        assert "stroke-dasharray" not in box and "waits for" not in box, state
    assert ">parse_claim</text>" in _box(svg, "PARSE_CLAIM")


def test_a_current_wait_state_keeps_its_marks() -> None:
    path = ["PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE", "REVIEW"]
    review = _box(diagram_svg(DEFAULT_MACHINE, path=path, current="REVIEW"), "REVIEW")
    assert 'class="state visited current wait"' in review
    assert "stroke-dasharray" in review and "waits for input" in review
