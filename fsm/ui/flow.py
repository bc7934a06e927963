"""The state diagram drawn vertically, for narrow screens: the machine's states top to
bottom in the diagram's order (by distance from the initial state, final states last),
each with how many of the shown revisions were in it and the current one marked in words
as well as colour. Each state is a button: on the live page it filters the timeline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from claimfsm.engine.machine import MachineDef
from claimfsm.state.model import Revision
from claimfsm.ui.diagram import layout
from claimfsm.ui.html import e

__all__ = ["flow_list"]


def flow_list(definition: MachineDef, revisions: Sequence[Revision], current: str) -> str:
    """An ``<ol class="flow">`` of the states, in the SVG diagram's reading order."""
    pos = layout(definition)
    # The failure state sits on its own row of the diagram: here it comes last.
    order = sorted(pos, key=lambda name: (name == definition.failure, pos[name][0],
                                          pos[name][1]))
    seen = Counter(r.fsm for r in revisions)
    items = []
    for name in order:
        n = seen.get(name, 0)
        cls = " ".join(c for c in ("visited" if n else "", "current" if name == current
                                   else "") if c)
        marks = (f' <span class="count">{n} revision{"s" if n != 1 else ""}</span>' if n
                 else "")
        now = ' <b class="now">● current</b>' if name == current else ""
        items.append(f'<li class="{cls}"><button type="button" class="flow-state" '
                     f'data-state="{e(name)}" title="show only the revisions in {e(name)}">'
                     f"{e(name)}{marks}{now}</button></li>")
    return f'<ol class="flow" aria-label="states, top to bottom">{"".join(items)}</ol>'
