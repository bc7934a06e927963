"""The parts of a session's page, shared by the live page and the HTML report: the
diagram with the executed path, the timeline of revisions and the verdict with its
evidence (the timeline and the verdict card live in their own modules: ``timeline``,
``verdict``)."""

from __future__ import annotations

from collections.abc import Sequence

from claimfsm.engine.machine import MachineDef
from claimfsm.state.model import Revision
from claimfsm.ui.diagram import diagram_svg
from claimfsm.ui.flow import flow_list
from claimfsm.ui.lineage import history_marks
from claimfsm.ui.timeline import timeline, tool_calls
from claimfsm.ui.verdict import verdict_panel

__all__ = ["diagram_panel", "timeline", "tool_calls", "verdict_panel"]


def diagram_panel(definition: MachineDef, revisions: Sequence[Revision],
                  head: Revision | None = None) -> str:
    """The machine with the path of ``revisions`` and the current state (``head``'s,
    default the last revision's) highlighted."""
    head = revisions[-1] if head is None else head
    # Moves counted, rewinds and a fork's start drawn as such (claimfsm.ui.lineage).
    marks = history_marks(revisions)
    svg = diagram_svg(definition, path=[r.fsm for r in revisions], current=head.fsm,
                      title=f"state diagram of session {head.sid}", counts=marks.moves,
                      rewinds=marks.rewinds, forked_at=marks.forked_at)
    return (f'<div class="diagram" id="diagram">{flow_list(definition, revisions, head.fsm)}'
            f'<div class="svg-box">{svg}</div></div>')
