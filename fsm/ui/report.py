"""``claimfsm report SID --html FILE``: one self-contained HTML file (styles and the
diagram inlined, no script, no link to load) with the diagram, the timeline, every
revision's state, envelope and events, and the verdict with its evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claimfsm.engine.lineage import forked_from
from claimfsm.engine.machine import MachineDef
from claimfsm.engine.version import history_version
from claimfsm.engine.views import revision_json
from claimfsm.state.model import Revision
from claimfsm.ui.html import e, page, pretty
from claimfsm.ui.lineage import lineage_banner
from claimfsm.ui.panels import diagram_panel, timeline, verdict_panel

__all__ = ["render_report"]


def render_report(definition: MachineDef, revisions: Sequence[Revision], *,
                  generated: str = "", lineage: Mapping[str, Any] | None = None) -> str:
    """The report of one session (``revisions`` oldest first); ``lineage``
    (:func:`claimfsm.engine.lineage.lineage_json`) adds its forks to the parent it names
    (without it, the parent its head names)."""
    head = revisions[-1]
    if lineage is None:
        lineage = {"forked_from": forked_from(head)}
    details = []
    for rev in revisions:
        data = revision_json(rev)
        details.append(
            f'<details class="card" id="revision-{rev.rev}"><summary><b>Revision {rev.rev}</b>'
            f" {e(rev.fsm)} <span class=\"muted\">{e(rev.skill or '')} {e(rev.ts)}</span>"
            f"</summary><h3>Envelope</h3><pre>{e(pretty(data['envelope']))}</pre>"
            f"<h3>Events</h3><pre>{e(pretty(data['events']))}</pre>"
            f"<h3>State</h3><pre>{e(pretty(data['state']))}</pre></details>")
    body = (
        f"<h1>Session <code>{e(head.sid)}</code></h1>"
        f"<p><b>Claim:</b> {e(head.state.claim)}</p>"
        f"{lineage_banner(head, lineage, links=False)}"
        f'<p class="muted">machine version <code id="version">'
        f"{e(history_version(revisions))}</code>; head revision {head.rev} in {e(head.fsm)}; "
        f"{len(revisions)} revisions{'; report written ' + e(generated) if generated else ''}"
        "</p>"
        f'<div class="grid"><div class="card"><h2>State diagram</h2>'
        f"{diagram_panel(definition, revisions)}</div>"
        f'<div class="card"><h2>Verdict</h2>{verdict_panel(head, links=False)}</div></div>'
        f'<div class="card"><h2>Timeline</h2>{timeline(revisions, actions=False)}</div>'
        f"<h2>Every revision</h2>{''.join(details)}"
    )
    return page(f"Report {head.sid}", body, nav=False)
