"""The state diagram as SVG, generated from the machine's definition on the server.

States are laid out left to right by their distance from the initial state; the
machine's failure state sits on its own row below, so the moves into it fan out instead
of crossing the main path. A session's executed moves and the states it visited are
highlighted and its current state is marked. A wait state is drawn dashed and
labelled "waits for input". No script, no fonts or files from the
network: the SVG is inlined into pages and reports as it is.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from html import escape

from claimfsm.engine.machine import MachineDef

__all__ = ["diagram_svg", "executed_moves", "layout"]

_W, _H, _GAP_X, _ROW, _PAD = 132, 40, 44, 96, 24


def layout(definition: MachineDef) -> dict[str, tuple[float, float]]:
    """The top-left corner of each state's box."""
    depth = {definition.initial: 0}
    frontier = [definition.initial]
    while frontier:
        nxt = []
        for src in frontier:
            for dst in definition.targets(src):
                if dst not in depth:
                    depth[dst] = depth[src] + 1
                    nxt.append(dst)
        frontier = nxt
    finals = definition.finals
    work = [s.name for s in definition.states if not s.final]
    last = max((depth.get(n, 0) for n in work), default=0) + 1
    columns: dict[int, list[str]] = {}
    for spec in definition.states:
        if spec.name == definition.failure:
            continue
        col = last if spec.name in finals else depth.get(spec.name, 0)
        columns.setdefault(col, []).append(spec.name)
    pos: dict[str, tuple[float, float]] = {}
    for col, names in columns.items():
        for row, name in enumerate(names):
            pos[name] = (_PAD + col * (_W + _GAP_X), _PAD + row * _ROW)
    if definition.failure is not None:
        rows = max((len(n) for n in columns.values()), default=1)
        middle = _PAD + (last * (_W + _GAP_X)) / 2
        pos[definition.failure] = (middle, _PAD + rows * _ROW)
    return pos


def executed_moves(states: Sequence[str]) -> set[tuple[str, str]]:
    """The moves a session made, from the FSM state of each revision in order."""
    return {(a, b) for a, b in itertools.pairwise(states)}


def _edge(src: tuple[float, float], dst: tuple[float, float], loop: bool) -> str:
    (x1, y1), (x2, y2) = src, dst
    if loop:  # a move to itself: a small arc over the box
        cx = x1 + _W / 2
        return (f"M{cx - 18:.0f},{y1:.0f} C{cx - 30:.0f},{y1 - 34:.0f} {cx + 30:.0f},"
                f"{y1 - 34:.0f} {cx + 18:.0f},{y1:.0f}")
    if x2 < x1 and abs(y2 - y1) < 1:  # a move back along the row: an arc above it
        sx, ex = x1 + _W / 2, x2 + _W / 2
        top = y1 - 20 - (x1 - x2) / 8
        return f"M{sx:.0f},{y1:.0f} C{sx:.0f},{top:.0f} {ex:.0f},{top:.0f} {ex:.0f},{y2:.0f}"
    if abs(y2 - y1) < 1:
        return f"M{x1 + _W:.0f},{y1 + _H / 2:.0f} L{x2:.0f},{y2 + _H / 2:.0f}"
    # another row: from the bottom (or top) middle of one box to the other's
    sy, ey = (y1 + _H, y2) if y2 > y1 else (y1, y2 + _H)
    return f"M{x1 + _W / 2:.0f},{sy:.0f} L{x2 + _W / 2:.0f},{ey:.0f}"


def _midpoint(d: str) -> tuple[float, float]:
    # The middle of a path's first and last points: where a count or a label goes.
    nums = [float(n) for n in d.replace("M", " ").replace("C", " ").replace("L", " ")
            .replace(",", " ").split()]
    return (nums[0] + nums[-2]) / 2, (nums[1] + nums[-1]) / 2


def _lineage_marks(pos: Mapping[str, tuple[float, float]],
                   rewinds: Sequence[tuple[str, str, int]], forked_at: str | None) -> list[str]:
    """Rewinds as dashed arcs below the boxes (from the state rewound from to the state
    rewound to, labelled with the revision), and a fork's start as a dashed arrow in."""
    out = []
    grouped: dict[tuple[str, str], list[int]] = {}
    for src, dst, rev in rewinds:  # the same rewind again: one arc, counted
        grouped.setdefault((src, dst), []).append(rev)
    for n, ((src, dst), revs) in enumerate(grouped.items()):
        if src not in pos or dst not in pos:
            continue
        rev = revs[-1]
        label = f"rewind @{rev}" if len(revs) == 1 else f"rewind x{len(revs)}"
        (x1, y1), (x2, y2) = pos[src], pos[dst]
        sx, ex, low = x1 + _W / 2, x2 + _W / 2, max(y1, y2) + _H + 22 + 10 * n
        d = f"M{sx:.0f},{y1 + _H:.0f} C{sx:.0f},{low:.0f} {ex:.0f},{low:.0f} {ex:.0f},{y2 + _H:.0f}"
        out.append(f'<path class="edge rewind" data-rewind="{escape(src)}->{escape(dst)}" '
                   f'data-rev="{rev}" d="{d}" fill="none" stroke="#b45309" stroke-width="2" '
                   'stroke-dasharray="6 4" marker-end="url(#arrow)"/>'
                   f'<text class="rewind-label" x="{(sx + ex) / 2:.0f}" y="{low - 4:.0f}" '
                   'text-anchor="middle" font-family="sans-serif" font-size="11" '
                   f'fill="#b45309">{label}</text>')
    if forked_at is not None and forked_at in pos:
        x, y = pos[forked_at]
        out.append(f'<path class="edge fork" data-fork="{escape(forked_at)}" '
                   f'd="M{x + _W / 2 - 40:.0f},{y - 26:.0f} L{x + _W / 2 - 8:.0f},{y:.0f}" '
                   'fill="none" stroke="#7c3aed" stroke-width="2" stroke-dasharray="4 3" '
                   'marker-end="url(#arrow)"/>'
                   f'<text class="fork-label" x="{x + _W / 2 - 44:.0f}" y="{y - 28:.0f}" '
                   'text-anchor="end" font-family="sans-serif" font-size="11" '
                   'fill="#7c3aed">forked here</text>')
    return out


def diagram_svg(definition: MachineDef, *, path: Iterable[str] = (),
                current: str | None = None, title: str = "",
                counts: Mapping[tuple[str, str], int] | None = None,
                rewinds: Sequence[tuple[str, str, int]] = (),
                forked_at: str | None = None) -> str:
    """The machine as an SVG document; ``path`` is the FSM state of each revision of a
    session (oldest first), ``current`` its head's state. ``counts`` (the machine moves a
    session took and how often; default: each step of ``path``) marks a move taken more
    than once with ``xN``; ``rewinds`` and ``forked_at`` are drawn as dashed edges
    (:class:`claimfsm.ui.lineage.History`)."""
    states = list(path)
    moves = executed_moves(states) if counts is None else set(counts)
    visited = set(states)
    pos = layout(definition)
    waiting = {name: w.input_model.__name__ for name, w in definition.waits.items()}
    width = max(x for x, _ in pos.values()) + _W + _PAD
    height = max(y for _, y in pos.values()) + _H + _PAD
    if rewinds:  # room for the arcs below the lowest row
        height += 24 + 10 * len({(s, d) for s, d, _ in rewinds})
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="fsm-diagram" role="img" '
           f'viewBox="0 -30 {width:.0f} {height + 30:.0f}" width="100%" '
           f'style="max-width:{width:.0f}px;height:auto" '
           f'aria-label="{escape(title or definition.name)}">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="context-stroke"/></marker></defs>']
    for src, dst in definition.transitions:
        taken = (src, dst) in moves
        edge_cls = "edge taken" if taken else "edge"
        d = _edge(pos[src], pos[dst], src == dst)
        out.append(f'<path class="{edge_cls}" data-move="{src}->{dst}" '
                   f'd="{d}" fill="none" '
                   f'stroke="{"#1f6feb" if taken else "#9aa4b2"}" '
                   f'stroke-width="{3 if taken else 1.2}" marker-end="url(#arrow)"/>')
        times = counts.get((src, dst), 0) if counts else 0
        if times > 1:  # a move taken again and again: drawn once, counted
            mx, my = _midpoint(d)
            # Beside a self-loop's arc (not on it); just above any other edge.
            mx, my, anchor = (mx + 24, my - 14, "start") if src == dst else (mx, my - 4,
                                                                             "middle")
            out.append(f'<text class="move-count" data-count="{src}->{dst}" x="{mx:.0f}" '
                       f'y="{my:.0f}" text-anchor="{anchor}" font-family="sans-serif" '
                       f'font-size="12" font-weight="700" fill="#1f6feb">x{times}</text>')
    out.extend(_lineage_marks(pos, rewinds, forked_at))
    x0, y0 = pos[definition.initial]
    out.append(f'<circle cx="{x0 - 14:.0f}" cy="{y0 + _H / 2:.0f}" r="6" fill="#333"/>')
    for spec in definition.states:
        x, y = pos[spec.name]
        cls = ["state"]
        fill, stroke = "#ffffff", "#6b7280"
        if spec.name in visited:
            cls.append("visited")
            fill, stroke = "#dbeafe", "#1f6feb"
        if spec.name == current:
            cls.append("current")
            fill, stroke = ("#fde68a", "#b45309") if spec.name != definition.failure else (
                "#fecaca", "#b91c1c")
        rx = 20 if spec.final else 6
        label = escape(spec.name)
        # A wait state holds the session for a person: dashed and labelled, so that it
        # reads without colour (and its input model is the box's tooltip).
        waits = waiting.get(spec.name)
        note = "waits for input" if waits is not None else (
            spec.skill or ("final" if spec.final else ""))
        if waits is not None:
            cls.append("wait")
        out.append(f'<g class="{" ".join(cls)}" data-state="{label}">'
                   + (f'<title>{label}: waits for {escape(waits)}</title>' if waits else "")
                   + f'<rect x="{x:.0f}" y="{y:.0f}" width="{_W}" height="{_H}" rx="{rx}" '
                   f'fill="{fill}" stroke="{stroke}" '
                   + ('stroke-dasharray="6 4" ' if waits is not None else "")
                   + f'stroke-width="{3 if spec.name == current else 1.5}"/>'
                   f'<text x="{x + _W / 2:.0f}" y="{y + 17:.0f}" text-anchor="middle" '
                   f'font-family="sans-serif" font-size="12" font-weight="600">{label}</text>'
                   f'<text x="{x + _W / 2:.0f}" y="{y + 31:.0f}" text-anchor="middle" '
                   f'font-family="sans-serif" font-size="10" fill="#555">'
                   f'{escape(note)}</text></g>')
    out.append("</svg>")
    return "".join(out)
