"""The web inspector's pages, rendered on the server (the session page's script only
fetches fragments and JSON from the same server)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from claimfsm.engine.errors import BadInput
from claimfsm.engine.machine import MachineDef
from claimfsm.engine.views import status_json
from claimfsm.replay.runner import ReplayReport
from claimfsm.state.catalog import SummaryPage, SummaryQuery
from claimfsm.state.model import Revision
from claimfsm.ui.html import csrf_field, e, json_html, page, pager
from claimfsm.ui.lineage import lineage_banner, lineage_script, what_if_form
from claimfsm.ui.panels import diagram_panel, timeline, verdict_panel
from claimfsm.ui.review import review_script, review_slot
from claimfsm.ui.timeline import time_cell

__all__ = [
    "SESSION_PAGE",
    "blocked",
    "document_page",
    "page_start",
    "panels",
    "replay_page",
    "session_page",
    "sessions_page",
]

_VERDICTS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED", "none")


def _select(name: str, options: Sequence[str], chosen: str | None, blank: str) -> str:
    opts = [f'<option value="">{e(blank)}</option>']
    opts += [f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o)}</option>'
             for o in options]
    return f'<select name="{name}">{"".join(opts)}</select>'


def _parent_cell(link: Mapping[str, Any] | None) -> str:
    # SID@REV, the parent's page; the time of the fork on hover.
    if not link or not link.get("sid"):
        return ""
    sid = str(link["sid"])
    return (f'<a class="forked-from" href="/sessions/{quote(sid, safe="")}" '
            f'title="forked at {e(link.get("at"))}"><code>{e(sid)}@{e(link.get("rev"))}'
            "</code></a>")


def sessions_page(result: SummaryPage, query: SummaryQuery, states: Sequence[str],
                  db: str, versions: Mapping[str, str] | None = None,
                  version: str | None = None,
                  parents: Mapping[str, Mapping[str, Any] | None] | None = None) -> str:
    """Every session with claim, state, verdict, revisions, last update, machine version
    and the session it was forked from (``parents``: ``{"sid", "rev", "at"}`` of each
    fork, a link to the parent); search, filters (``version`` among them), keyset paging,
    and a form that starts a session."""
    rows = []
    versions = versions or {}
    parents = parents or {}
    for s in result.items:
        verdict = (f'<span class="badge {e(s.verdict)}">{e(s.verdict)}</span>'
                   if s.verdict else "")
        rows.append(f'<tr class="session" data-sid="{e(s.sid)}"><td><a href="/sessions/'
                    f'{quote(s.sid, safe="")}"><code>{e(s.sid)}</code></a></td>'
                    f"<td>{e(s.claim)}</td><td><span class=\"badge {e(s.fsm)}\">{e(s.fsm)}"
                    f"</span></td><td>{verdict}</td><td>{s.revisions}</td>"
                    f'<td class="muted">{time_cell(s.updated)}</td>'
                    f'<td><code class="version">{e(versions.get(s.sid, ""))}</code></td>'
                    f"<td>{_parent_cell(parents.get(s.sid))}</td></tr>")
    keep = {k: v for k, v in (("q", query.q), ("fsm", query.fsm), ("verdict", query.verdict),
                              ("version", version),
                              ("limit", query.limit if query.limit != 50 else None))
            if v}
    nav = pager("/", keep, paged=query.before is not None, cursor="before",
                next_key=result.next)
    body = (
        f'<h1>Sessions <span class="muted">{e(db)}</span></h1>'
        '<div class="card"><form id="start" class="inline">'
        '<input name="claim" size="70" placeholder="A claim to verify" required>'
        '<select name="retrieval"><option value="">default profile</option>'
        '<option value="lexical">lexical retrieval</option>'
        '<option value="hybrid">hybrid retrieval</option></select>'
        '<button class="primary" type="submit">Start session</button>'
        '<span id="msg" class="msg"></span></form></div>'
        '<form class="inline card" method="get" action="/" id="filters">'
        f'<input name="q" value="{e(query.q or "")}" placeholder="search claim text">'
        f'{_select("fsm", states, query.fsm, "any state")}'
        f'{_select("verdict", _VERDICTS, query.verdict, "any verdict")}'
        f'<input name="version" size="18" value="{e(version or "")}" '
        'placeholder="any version">'
        '<button type="submit">Filter</button></form>'
        '<div class="scroll-x" id="sessions-box"><table id="sessions"><thead><tr>'
        "<th>session</th><th>claim</th>"
        "<th>state</th>"
        "<th>verdict</th><th>revisions</th><th>last update</th><th>version</th>"
        "<th>forked from</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        + ('<p class="muted">No sessions match.</p>' if not rows else "")
        + f'<p class="inline">{nav}</p>'
    )
    return page("Sessions", body, script="sessions.js")


#: Revisions the session page shows at once: the newest, then "older revisions" by key.
SESSION_PAGE = 100


def page_start(head: int, before: int | None, size: int = SESSION_PAGE) -> int:
    """The first revision of the session page ending just before revision ``before``
    (``None``: the newest page, ending at ``head``)."""
    end = head + 1 if before is None else before
    if not 1 <= end <= head + 1:
        raise BadInput(f"before: {end}, the session's revisions are 0 to {head}: older pages "
                       f"start below {head + 1}", field="before")
    return max(0, end - size)


def _pager(sid: str, shown: Sequence[Revision], head: Revision) -> str:
    first, last = shown[0].rev, shown[-1].rev
    base = f"/sessions/{quote(sid, safe='')}"
    links = []
    if last < head.rev:
        links.append(f'<a class="button" id="newest" href="{e(base)}">newest revisions</a>')
    if first > 0:
        links.append(f'<a class="button" id="older" href="{e(base)}?before={first}">'
                     "older revisions →</a>")
    return f'<p class="inline" id="pager">{" ".join(links)}</p>' if links else ""


def blocked(definition: MachineDef, head: Revision) -> str | None:
    """Why Step and Run cannot apply to the session now (they are disabled, this on
    hover), or ``None`` when they can."""
    if head.fsm == definition.failure:
        return (f"The session is {head.fsm}: nothing is left to run. Roll back to an "
                "earlier revision (reopening it) or fork one to run it again.")
    if head.fsm in definition.finals:
        return (f"The session is {head.fsm}: nothing is left to run. Roll back or fork "
                "a revision to run it again.")
    wait = status_json(head)["waiting"]
    if wait and wait.get("kind") == "input":
        return (f"The session waits for input ({wait.get('input')}) in {wait.get('state')}: "
                "give it with the form below (or claimfsm input).")
    if wait:
        return (f"The session is paused in {wait.get('state')}: it runs on when resumed "
                "(claimfsm resume, or POST .../resume).")
    return None


def panels(definition: MachineDef, head: Revision, shown: Sequence[Revision]) -> str:
    """What changes as revisions land: diagram, verdict and the timeline of the revisions
    ``shown`` (one page of the session, oldest first; a fragment). The diagram marks the
    path of those revisions and the head's state."""
    span = (f"revisions {shown[0].rev}–{shown[-1].rev} of {head.rev + 1}"
            if len(shown) <= head.rev else f"{len(shown)} revisions")
    return (f'<div class="grid"><div class="card"><h2>State diagram</h2>'
            f"{diagram_panel(definition, shown, head)}</div>"
            f'<div class="card"><h2>Verdict</h2>{review_slot(definition, head)}'
            f"{verdict_panel(head)}</div></div>"
            f'<div class="card"><h2>Timeline <span class="muted">{span}, '
            f'head {head.rev} in <span id="head-fsm" data-blocked="'
            f'{e(blocked(definition, head) or "")}">{e(head.fsm)}</span></span></h2>'
            '<p id="filter" class="filter" hidden></p>'
            f"{timeline(shown, actions=True, head=head)}{_pager(head.sid, shown, head)}</div>")


def _action(ident: str, label: str, why: str | None, *, primary: bool = False) -> str:
    # Disabled with the reason on hover, rather than a 409 after the click.
    cls = ' class="primary"' if primary else ""
    off = f' disabled title="{e(why)}"' if why else ""
    return f'<button id="{ident}"{cls}{off}>{e(label)}</button>'


def session_page(definition: MachineDef, head: Revision, shown: Sequence[Revision],
                 version: str, lineage: Mapping[str, Any] | None = None) -> str:
    """A session: diagram, verdict, one page of the timeline (``shown``), revision detail,
    diff, and the controls; ``version`` is the machine version the session runs on;
    ``lineage`` (:func:`claimfsm.engine.lineage.lineage_json`) its parent and forks, with
    the what-if fork form. Its size is the page's, whatever the session's length."""
    why = blocked(definition, head)
    pick = (f'from <input type="number" name="a" min="0" max="{head.rev}" '
            f'value="{shown[0].rev}" required> to <input type="number" name="b" min="0" '
            f'max="{head.rev}" value="{shown[-1].rev}" required>')
    body = (
        f'<div id="session" data-sid="{e(head.sid)}" data-rev="{head.rev}" '
        f'data-fsm="{e(head.fsm)}"><h1>Session <code>{e(head.sid)}</code> '
        f'<span class="badge version" id="version" title="machine version">'
        f"version {e(version)}</span></h1>"
        f'<p><b>Claim:</b> {e(head.state.claim)}</p>'
        f"{lineage_banner(head, lineage or {})}"
        f'<div class="card inline">{_action("step", "Step", why, primary=True)} '
        f'{_action("run", "Run to the end", why)} '
        f'<button id="check">Check chain</button> '
        f'<a class="button" id="export" href="/api/v1/sessions/{quote(head.sid, safe="")}'
        '/record" download>Export record</a> '
        f'<a class="button" href="/api/v1/sessions/{quote(head.sid, safe="")}/report" '
        'download>HTML report</a> <span id="msg" class="msg"></span></div>'
        f'<div id="live">{panels(definition, head, shown)}</div>'
        '<div class="grid"><div class="card" id="diff-card"><h2>Compare two revisions</h2>'
        f'<form id="diff" class="inline">{pick}<button type="submit">Diff</button></form>'
        '<div id="diff-out"></div></div>'
        '<div class="card" id="detail" tabindex="-1"><p class="muted">Select a revision in '
        "the timeline to see its state, envelope and events.</p></div></div>"
        f"{what_if_form(head, shown)}</div>"
    )
    return page(f"Session {head.sid}", body + review_script() + lineage_script(),
                script="session.js")


def document_page(doc: dict[str, Any]) -> str:
    """A source document of the evidence index."""
    body = (f'<h1>{e(doc.get("title") or doc["doc_id"])}</h1><p class="muted">document '
            f'<code>{e(doc["doc_id"])}</code>, source {e(doc.get("source"))}</p>'
            f'<div class="card" id="document-text">{e(doc.get("text"))}</div>')
    return page(str(doc["doc_id"]), body)


def replay_page(names: Sequence[str], result: dict[str, Any] | None = None,
                error: dict[str, Any] | None = None) -> str:
    """Pick or upload a record, replay it (strict/tools), see the first divergence."""
    picks = "".join(f'<option value="{e(n)}">{e(n)}</option>' for n in names)
    body = [
        "<h1>Replay a record</h1>",
        '<form class="card inline" method="post" action="/replay" enctype="multipart/form-data"'
        f' id="replay-form">{csrf_field()}'
        f'<select name="name"><option value="">pick a record…</option>{picks}</select>'
        ' or upload <input type="file" name="file" accept=".jsonl">'
        '<select name="mode"><option value="strict">strict</option>'
        '<option value="tools">tools</option></select>'
        '<button class="primary" type="submit">Replay</button></form>',
    ]
    if error is not None:
        body.append(f'<p class="msg err" id="replay-error">{e(error["code"])}: '
                    f"{e(error['msg'])}</p>")
    if result is not None:
        body.append(_replay_result(result))
    return page("Replay", "".join(body), script="replay.js")


def _replay_result(result: dict[str, Any]) -> str:
    report: ReplayReport = result["report"]
    d = report.divergence
    head = (f'<p id="replay-status"><b>{e(report.source)}</b> ({e(report.mode)}): '
            + ('<span class="badge ok">replayed clean</span>' if report.ok else
               '<span class="badge error">DIVERGED</span>')
            + f" · {report.steps} steps · verdict {e(report.expected.verdict or '-')} → "
            f"{e(report.actual.verdict or '-')}</p>")
    rows = []
    for line in result["lines"]:
        hit = d is not None and line["line"] == d.line
        rows.append(f'<tr class="{"diverged" if hit else ""}" data-line="{line["line"]}">'
                    f"<td>{line['line']}</td><td>{e(line['t'])}</td><td>{e(line['rev'])}</td>"
                    f"<td>{e(line['move'])}</td><td>{e(line['skill'] or '-')}</td>"
                    f"<td>{e(line['status'])}</td></tr>")
    out = [head, '<div class="scroll-x"><table id="replay-lines"><tr><th>line</th>'
           "<th>kind</th><th>rev</th><th>move</th><th>skill</th><th>envelope</th></tr>"
           + "".join(rows) + "</table></div>"]
    if d is not None:
        out.append(
            f'<div class="card" id="divergence"><h2>First divergence: {e(d.kind)} at step '
            f"{d.step} (line {d.line}), {e(d.state)}</h2><p>path <code>{e(d.path)}</code></p>"
            f"<p>expected <code>{e(result['expected'])}</code><br>actual "
            f"<code>{e(result['actual'])}</code></p>"
            f"<h3>The recorded line, the diverging value marked</h3>"
            f"<pre>{json_html(result['line_json'], result['highlight'])}</pre></div>")
    return "".join(out)
