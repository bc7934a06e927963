"""The parts of a session's page, shared by the live page and the HTML report: the
diagram with the executed path, the timeline of revisions and the verdict with its
evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from claimfsm.engine.machine import MachineDef
from claimfsm.engine.views import profile_text, verdict_json
from claimfsm.state.model import Revision
from claimfsm.ui.diagram import diagram_svg
from claimfsm.ui.html import e, mark_terms
from claimfsm.ui.lineage import history_marks

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
    return f'<div class="diagram" id="diagram">{svg}</div>'


def tool_calls(rev: Revision) -> list[dict[str, Any]]:
    """The revision's tool calls: tool, ok, code, duration, attempt."""
    return [ev for ev in rev.events if ev.get("type") == "ToolInvoked"]


def _rollback_kind(rev: Revision) -> str:
    rewind = next((ev for ev in rev.events if ev.get("type") in ("Rewind", "Forked")), None)
    if rewind is not None and rewind["type"] == "Forked":  # a fork's own first revision
        src = rewind.get("from") or {}
        return f"forked from {src.get('sid')}@{src.get('rev')}"
    if rewind is not None:
        return f"rewind to {rewind.get('to', '?')}" + (" (reopen)" if rewind.get("reopen") else "")
    rb = (rev.envelope or {}).get("rb")
    return "" if rb in (None, "none") else f"rb={rb}"


def _tools_cell(rev: Revision) -> str:
    calls = tool_calls(rev)
    if not calls:
        return ""
    items = []
    for c in calls:
        status = "ok" if c.get("ok") else f'<span class="fail">{e(c.get("code") or "error")}</span>'
        items.append(f"{e(c.get('tool'))} {e(c.get('duration_ms'))} ms {status}")
    return f'<div class="tools">{"<br>".join(items)}</div>'


def timeline(revisions: Sequence[Revision], *, actions: bool, selected: int | None = None,
             head: Revision | None = None) -> str:
    """Each of ``revisions``: move, skill, envelope status and code, rollback, retries,
    tools. ``head`` (default the last of them) is the session's newest revision, when
    ``revisions`` is one page of a longer history."""
    head = revisions[-1] if head is None else head
    rows = []
    before: str | None = None
    for rev in revisions:
        env = rev.envelope or {}
        s = env.get("s")
        code = (env.get("e") or {}).get("code", "")
        retry = rev.state.retry
        retries = f"{retry.attempts} ({e(retry.code)})" if retry is not None else ""
        move = f"{e(before)} → {e(rev.fsm)}" if before and before != rev.fsm else e(rev.fsm)
        status = f'<span class="badge {e(s)}">{e(s)}</span> {e(code)}' if s else "start"
        buttons = ""
        if actions:
            buttons = (f'<button class="small" data-rollback="{rev.rev}" '
                       f'title="a new head equal to this revision">rollback here</button> '
                       f'<button class="small" data-fork="{rev.rev}" '
                       f'title="a new session from this revision">fork here</button>')
        sel = " sel" if selected == rev.rev else ""
        rows.append(f'<tr class="rev{sel}" data-rev="{rev.rev}" id="rev-{rev.rev}">'
                    f"<td>{rev.rev}</td><td>{move}</td><td>{e(rev.skill or '-')}</td>"
                    f"<td>{status}</td><td>{e(_rollback_kind(rev))}</td><td>{retries}</td>"
                    f"<td>{_tools_cell(rev)}</td><td class=\"muted\">{e(rev.ts)}</td>"
                    + (f"<td>{buttons}</td>" if actions else "") + "</tr>")
        before = rev.fsm
    head_cells = ("<th>rev</th><th>move</th><th>skill</th><th>envelope</th><th>rollback</th>"
                  "<th>retries</th><th>tool calls</th><th>time</th>"
                  + ("<th></th>" if actions else ""))
    return (f'<table id="timeline" data-head="{head.rev}"><thead><tr>{head_cells}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def verdict_panel(head: Revision, *, links: bool = True) -> str:
    """The verdict, its reasons, and the evidence per subclaim with the claim's key terms
    marked, each sentence linked to its source document."""
    data = verdict_json(head)
    claim = head.state.claim
    verdict = data["verdict"]
    out = [f'<div id="verdict"><p>{e(profile_text(head))}</p>']
    if data.get("error"):
        err = data["error"]
        out.append(f'<p><span class="badge error">{e(err.get("code"))}</span> '
                   f"{e(err.get('msg'))}</p>")
    if data.get("waiting"):
        w = data["waiting"]
        what = (f"input ({w.get('input')})" if w["kind"] == "input"
                else f"resume (paused {w.get('when')} {w['state']})")
        out.append(f'<p id="waiting"><span class="badge WAITING">WAITING</span> for '
                   f"{e(what)} since {e(w.get('since'))}</p>")
    if verdict:
        # Who decided: the engine, or a reviewer (docs/review.md).
        review = (head.state.verdict or {}).get("review") or {}
        why = f": {review['reason']}" if review.get("reason") else ""
        out.append(f'<p>Verdict: <span class="badge {e(verdict)}" id="verdict-label">'
                   f'{e(verdict)}</span> <span id="provenance">by '
                   f"{e(data.get('provenance'))}{e(why)}</span></p>")
        reasons = (head.state.verdict or {}).get("reasons", [])
        if reasons:
            out.append("<ul>" + "".join(f"<li>{e(r)}</li>" for r in reasons) + "</ul>")
    else:
        out.append(f'<p class="muted">No verdict yet (the session is in {e(head.fsm)}).</p>')
    judged = {j.get("id") for j in head.state.judgments}
    for sub in data["subclaims"]:
        label = sub["verdict"] if sub["id"] in judged else "not judged yet"
        out.append(f'<h3><span class="badge {e(label)}">{e(label)}</span> '
                   f"[{e(sub['id'])}] {e(sub['c'])}</h3>")
        for ev in sub["evidence"]:
            doc = str(ev["id"]).split("#")[0]
            link = (f' <a href="/documents/{quote(doc, safe="")}">{e(doc)}</a>' if links
                    else f" <code>{e(doc)}</code>")
            out.append(f'<div class="ev"><span class="evidence">{mark_terms(ev["text"], claim)}'
                       f'</span> <span class="muted">({e(ev["source"])}, '
                       f"{float(ev['score']):.3f})</span>{link}</div>")
    out.append("</div>")
    return "".join(out)
