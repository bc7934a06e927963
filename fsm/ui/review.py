"""The review queue in the browser (docs/ui.md, docs/review.md): the page that lists the
sessions waiting for a person, oldest first, and the review form the session page shows
next to the evidence while a session waits in REVIEW (who decided a verdict is the verdict
panel's, :func:`claimfsm.ui.panels.verdict_panel`).

The form posts the exact input of the claim machine's REVIEW state
(:class:`claimfsm.engine.review.ReviewInput`) to ``POST /api/v1/sessions/{sid}/input``
with the revision the page showed (``expected_rev``), so a page the session has moved on
from is refused with ``REV_CONFLICT``; ``review.js`` keeps a form the reviewer has started
when the page refreshes, for that refusal to reach them instead of their decision being
silently re-aimed at a head they have not seen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from claimfsm.engine.errors import BadInput
from claimfsm.engine.machine import MachineDef
from claimfsm.engine.review import ReviewInput
from claimfsm.state.holds import hold_of
from claimfsm.state.model import Revision
from claimfsm.state.queue import WaitingPage, WaitingQuery
from claimfsm.ui.html import e, page, pager
from claimfsm.ui.static import asset

__all__ = [
    "AGES",
    "age_delta",
    "queue_page",
    "review_script",
    "review_slot",
]

#: The age filter's choices on the page (any ``N`` + ``m``/``h``/``d``/``w`` is taken).
AGES = (("", "any age"), ("15m", "waiting ≥ 15 min"), ("1h", "≥ 1 hour"),
        ("1d", "≥ 1 day"), ("1w", "≥ 1 week"))
_AGE = re.compile(r"^([1-9][0-9]{0,5})([mhdw])$")
_UNIT = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
_VERDICTS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED", "none")
_LABELS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")


def age_delta(age: str) -> timedelta:
    """``15m``, ``2h``, ``1d``, ``1w`` as a duration; ``BAD_INPUT`` naming ``age`` else."""
    m = _AGE.match(age)
    if m is None:
        raise BadInput(f"age: {age!r} is not an age (a number and m, h, d or w: 15m, 2h, 1d)",
                       field="age")
    return timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2)])


def _ago(updated: str, now: datetime) -> str:
    try:
        moment = datetime.fromisoformat(updated)
        if moment.tzinfo is None:  # the queue's ``since``: UTC without its offset
            moment = moment.replace(tzinfo=UTC)
        seconds = int((now - moment).total_seconds())
    except (ValueError, TypeError):  # a timestamp of another format or zone: say nothing
        return ""
    if seconds < 60:
        return "< 1 min"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if days:
        return f"{days} d {hours % 24} h"
    return f"{hours} h {minutes % 60:02d} min" if hours else f"{minutes} min"


def _shown(since: str) -> str:
    return since.replace("T", " ")[:19] + " UTC" if since else ""


def _select(name: str, options: Sequence[tuple[str, str]], chosen: str | None) -> str:
    opts = "".join(f'<option value="{e(v)}"{" selected" if v == (chosen or "") else ""}>'
                   f"{e(label)}</option>" for v, label in options)
    return f'<select name="{name}">{opts}</select>'


def _waits_for(definition: MachineDef, fsm: str) -> str:
    wait = definition.waits.get(fsm)
    return f"input ({wait.input_model.__name__})" if wait is not None else "resume (paused)"


def queue_page(result: WaitingPage, query: WaitingQuery, age: str, definition: MachineDef,
               now: datetime) -> str:
    """The waiting sessions, oldest first, with the state, verdict and age filters and a
    next page by key."""
    rows = []
    for s in result.items:
        href = f"/sessions/{quote(s.sid, safe='')}"
        verdict = (f'<span class="badge {e(s.verdict)}">{e(s.verdict)}</span>'
                   if s.verdict else '<span class="muted">none</span>')
        rows.append(f'<tr class="waiting" data-sid="{e(s.sid)}"><td><a href="{href}">'
                    f"<code>{e(s.sid)}</code></a></td><td>{e(s.claim)}</td>"
                    f'<td><span class="badge {e(s.fsm)}">{e(s.fsm)}</span></td>'
                    f"<td>{e(_waits_for(definition, s.fsm))}</td><td>{verdict}</td>"
                    f'<td class="muted">{e(_shown(s.since))}</td><td class="age">'
                    f"{e(_ago(s.since, now))}</td><td>{s.revisions}</td></tr>")
    # The wait states first (a stable sort): they are what a reviewer filters for.
    states = sorted((n for n in definition.names if n not in definition.finals),
                    key=lambda n: n not in definition.waits)
    keep = {k: v for k, v in (("fsm", query.fsm), ("verdict", query.verdict), ("age", age),
                              ("limit", query.limit if query.limit != 50 else None)) if v}
    nav = pager("/review", keep, paged=query.after is not None, cursor="after",
                next_key=result.next)
    body = (
        '<h1>Review queue <span class="muted">sessions waiting for a person, oldest first'
        "</span></h1>"
        '<form class="inline card" method="get" action="/review" id="queue-filters">'
        f'{_select("fsm", [("", "any state"), *((n, n) for n in states)], query.fsm)}'
        f'{_select("verdict", [("", "any verdict"), *((v, v) for v in _VERDICTS)], query.verdict)}'
        f"{_select('age', AGES if age in dict(AGES) else [*AGES, (age, age)], age)}"
        '<button type="submit">Filter</button></form>'
        '<table id="queue"><thead><tr><th>session</th><th>claim</th><th>state</th>'
        "<th>waits for</th><th>verdict</th><th>waiting since</th><th>age</th>"
        f"<th>revisions</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + ('<p class="muted" id="queue-empty">No session waits that matches.</p>'
           if not rows else "")
        + f'<p class="inline">{nav}</p>'
    )
    return page("Review queue", body)


def review_slot(definition: MachineDef, head: Revision) -> str:
    """The place of the review form on the session page: the form while the session
    waits for a ReviewInput, else empty (``review.js`` puts a started form back here)."""
    hold = hold_of(head.state)
    wait = definition.waits.get(head.fsm)
    if hold is None or hold.get("kind") != "input" or wait is None \
            or wait.input_model is not ReviewInput:
        return '<div id="review-slot"></div>'
    return f'<div id="review-slot">{_form(head, hold)}</div>'


def _form(head: Revision, hold: dict[str, Any]) -> str:
    radios = "".join(
        f'<label><input type="radio" name="decision" value="{v}"'
        f'{" checked" if v == "approve" else ""}> {label}</label> '
        for v, label in (("approve", "approve"), ("override", "override the verdict"),
                         ("send_back", "send back to retrieval")))
    labels = '<option value="">choose…</option>' + "".join(
        f'<option value="{v}">{v}</option>' for v in _LABELS)
    until = f", until {e(hold['until'])}" if hold.get("until") else ""
    return (
        f'<form id="review-form" class="review" data-rev="{head.rev}" autocomplete="off">'
        f'<h3>Review <span class="muted">waiting in {e(head.fsm)} since '
        f"{e(hold.get('since'))}{until}</span></h3>"
        f'<p class="inline">{radios}</p>'
        '<p data-for="override" hidden>verdict <select name="verdict">'
        f"{labels}</select></p>"
        '<p data-for="send_back" hidden>extra queries, one a line<br>'
        '<textarea name="queries" rows="2" cols="48"></textarea><br>document ids, one a '
        'line<br><textarea name="doc_ids" rows="2" cols="48"></textarea></p>'
        '<p data-for="override send_back" hidden>reason (required)<br>'
        '<textarea name="reason" rows="2" cols="48"></textarea></p>'
        '<p class="inline">your name <input name="actor" size="20" placeholder="reviewer">'
        '<button type="submit" class="primary" id="review-submit">Submit decision</button>'
        "</p>"
        '<p class="msg review-note" id="review-note"></p>'
        '<p class="msg" id="review-msg"></p></form>'
    )


def review_script() -> str:
    """The review form's script, inlined in the session page."""
    return f"<script>\n{asset('review.js')}</script>"
