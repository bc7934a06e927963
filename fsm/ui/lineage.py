"""Lineage on the session page and in the report: the banner ("forked from SID@REV",
"forks: ..." linking both ways, each with a link to compare), the what-if fork form,
and what the diagram draws for a session's history (moves counted, rewinds, forks)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from claimfsm.engine.lineage import FORKED
from claimfsm.engine.views import profile_json
from claimfsm.state.model import Revision
from claimfsm.ui.html import e
from claimfsm.ui.static import asset

__all__ = ["JUDGED_IN", "History", "history_marks", "lineage_banner", "lineage_script",
           "what_if_form"]


def _session(sid: str) -> str:
    return f'<a href="/sessions/{quote(sid, safe="")}"><code>{e(sid)}</code></a>'


def _compare(a: str, b: str, label: str, ident: str = "") -> str:
    attr = f' id="{ident}"' if ident else ""
    return (f'<a class="button small"{attr} href="/compare?{e(urlencode({"a": a, "b": b}))}">'
            f"{e(label)}</a>")


def _changed(changes: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{str(c.get('field', '')).removeprefix('profile.')}: {c.get('old')} → "
                     f"{c.get('new')}" for c in changes)


def lineage_banner(head: Revision, lineage: Mapping[str, Any], *, links: bool = True) -> str:
    """``forked from SID@REV`` (when, what a what-if changed) and ``forks: SID@REV, ...``;
    with ``links`` each names its session's page and a comparison (the report has none).
    Empty for a session that is neither a fork nor forked."""
    link, forks = lineage.get("forked_from"), lineage.get("forks") or []
    if not link and not forks:
        return ""
    name = _session if links else (lambda sid: f"<code>{e(sid)}</code>")
    out = ['<div class="card lineage" id="lineage">']
    if link:
        changed = _changed(link.get("changes") or [])
        out.append(f'<p id="forked-from">Forked from {name(str(link["sid"]))}@{e(link["rev"])}'
                   f' <span class="muted">at {e(link.get("at"))}</span>'
                   + (f' · <span id="what-if">what if: {e(changed)}</span>' if changed else "")
                   + (" " + _compare(str(link["sid"]), head.sid, "compare with parent",
                                     "compare-parent") if links else "") + "</p>")
    if forks:
        items = []
        for f in forks:
            sid = str(f["sid"])
            items.append(f'<li data-fork-sid="{e(sid)}">{name(sid)} from revision '
                         f'{e(f.get("rev"))} <span class="muted">{e(f.get("at"))}</span>'
                         + (" " + _compare(head.sid, sid, "compare") if links else "")
                         + "</li>")
        out.append(f'<p>Forks:</p><ul id="forks">{"".join(items)}</ul>')
    out.append("</div>")
    return "".join(out)


#: The state whose step judges: a what-if about the judge forks where the session entered it.
JUDGED_IN = "VERIFY"


def what_if_form(head: Revision, shown: Sequence[Revision] = ()) -> str:
    """Fork at a revision with another retrieval or judge (blank: the parent's), and
    compare this session with any other by id. The revision offered is the last of
    ``shown`` that entered the judging state (so the fork judges again), else the head."""
    prof = profile_json(head) or {}
    entered = [r.rev for prev, r in itertools.pairwise(shown)
               if r.fsm == JUDGED_IN and prev.fsm != JUDGED_IN]
    at = entered[-1] if entered else head.rev
    return (
        '<div class="card" id="what-if-card"><h2>What if…</h2>'
        '<form id="what-if-form" class="inline">'
        f'<label>fork at revision <input type="number" name="at" min="0" max="{head.rev}" '
        f'value="{at}" required></label>'
        '<label>retrieval <select name="retrieval"><option value="">as now '
        f'({e(prof.get("retrieval"))})</option><option value="lexical">lexical</option>'
        '<option value="hybrid">hybrid</option></select></label>'
        '<label>judge <select name="judge"><option value="">as now '
        f'({e(prof.get("judge"))})</option><option value="lexical">lexical</option>'
        '<option value="learned">learned</option></select></label>'
        '<label>stance model <input name="stance_model" size="24" placeholder="MODEL.npz '
        '(learned judge)"></label>'
        '<button type="submit" class="primary">Fork and run</button></form>'
        '<form id="compare-form" class="inline" method="get" action="/compare">'
        f'<input type="hidden" name="a" value="{e(head.sid)}">'
        '<label>compare with session <input name="b" size="16" required></label>'
        '<button type="submit">Compare</button></form></div>')


def lineage_script() -> str:
    """The what-if form's script, inlined in the session page."""
    return f"<script>\n{asset('lineage.js')}</script>"


class History:
    """What a session's revisions did, for the diagram: each machine move with how many
    times it was taken, each rewind as ``(from state, to state, revision)``, and where
    the session was forked from (the state of its first revision of its own)."""

    def __init__(self, revisions: Sequence[Revision]) -> None:
        self.moves: Counter[tuple[str, str]] = Counter()
        self.rewinds: list[tuple[str, str, int]] = []
        self.forked_at: str | None = None
        before: Revision | None = None
        for rev in revisions:
            kinds = {ev.get("type") for ev in rev.events}
            if before is not None:
                if "Rewind" in kinds:
                    self.rewinds.append((before.fsm, rev.fsm, rev.rev))
                elif FORKED in kinds:
                    self.forked_at = rev.fsm
                else:
                    self.moves[(before.fsm, rev.fsm)] += 1
            before = rev


def history_marks(revisions: Sequence[Revision]) -> History:
    """:class:`History` of ``revisions`` (oldest first)."""
    return History(revisions)
