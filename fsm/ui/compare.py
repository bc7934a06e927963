"""Two sessions side by side: ``/compare?a=SID&b=SID`` and ``GET /api/v1/compare?a=&b=``.

Each side's verdict, profile and cited evidence (a sentence is marked when only one side
cites it), how the two are related (one forked from the other), and the first revision
where they differ: revisions are compared by number on what they hold (FSM state, skill,
envelope, state), leaving out what any copy changes (the session id, the time), so a
fork and its parent agree up to the revision it was forked at and differ from its own
revision on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from claimfsm.engine.lineage import LINEAGE_KEY, forked_from
from claimfsm.engine.views import profile_json, verdict_json
from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore
from claimfsm.ui.api import JSON
from claimfsm.ui.diff import diff_values
from claimfsm.ui.html import e, page
from claimfsm.ui.queries import CompareQuery, query_model
from claimfsm.ui.service import Service

__all__ = ["MAX_CHANGES", "compare_json", "compare_page", "compare_routes", "pretty_short"]

T = TypeVar("T")

#: Changes listed for the first revision that differs (the rest are counted).
MAX_CHANGES = 50


def _side(head: Revision) -> dict[str, Any]:
    data = verdict_json(head)
    return {"sid": head.sid, "claim": head.state.claim, "rev": head.rev, "fsm": head.fsm,
            "verdict": data["verdict"], "profile": profile_json(head),
            "forked_from": forked_from(head), "subclaims": data["subclaims"]}


def _held(rev: Revision) -> dict[str, Any]:
    # What a revision holds, less what a copy re-stamps and the link a fork adds.
    state = rev.state.model_dump(mode="json", exclude={"sid"})
    state["runtime"] = {k: v for k, v in state["runtime"].items() if k != LINEAGE_KEY}
    return {"fsm": rev.fsm, "skill": rev.skill, "envelope": rev.envelope,
            "events": rev.events, "state": state}


def _relation(a: Revision, b: Revision) -> str | None:
    for child, parent in ((b, a), (a, b)):
        link = forked_from(child)
        if link is not None and link.get("sid") == parent.sid:
            return f"{child.sid} was forked from {parent.sid}@{link.get('rev')}"
    return None


def _first_difference(ra: Sequence[Revision], rb: Sequence[Revision]) -> dict[str, Any] | None:
    for x, y in zip(ra, rb, strict=False):
        hx, hy = _held(x), _held(y)
        if hx != hy:
            changes = diff_values(hx, hy)
            return {"rev": x.rev, "a": {"fsm": x.fsm, "skill": x.skill},
                    "b": {"fsm": y.fsm, "skill": y.skill}, "total": len(changes),
                    "changes": changes[:MAX_CHANGES]}
    if len(ra) != len(rb):  # one is the other's prefix
        short, rev = ("a", len(ra)) if len(ra) < len(rb) else ("b", len(rb))
        return {"rev": rev, "a": None if short == "a" else {"fsm": ra[rev].fsm,
                                                               "skill": ra[rev].skill},
                "b": None if short == "b" else {"fsm": rb[rev].fsm, "skill": rb[rev].skill},
                "total": 0, "changes": []}
    return None


def compare_json(store: StateStore, a: str, b: str) -> dict[str, Any]:
    """``{"a": side, "b": side, "relation", "same_revisions", "first_difference"}``: each
    side's sid, claim, head rev and FSM state, verdict, profile, parent and subclaims with
    cited evidence; ``first_difference`` is ``{"rev", "a", "b", "total", "changes"}`` or
    ``None`` when the sessions hold the same revisions. Reads both histories."""
    ra, rb = list(store.history(a)), list(store.history(b))
    if not ra:
        store.head(a)
    if not rb:
        store.head(b)
    first = _first_difference(ra, rb)
    return {"a": _side(ra[-1]), "b": _side(rb[-1]), "relation": _relation(ra[-1], rb[-1]),
            "same_revisions": len(ra) if first is None else first["rev"],
            "first_difference": first}


def _cited(side: dict[str, Any]) -> set[str]:
    return {str(ev["id"]) for sub in side["subclaims"] for ev in sub["evidence"]}


def _column(name: str, side: dict[str, Any], other: set[str]) -> str:
    sid = side["sid"]
    verdict = side["verdict"] or "none yet"
    prof = side["profile"] or {}
    model = f' ({e(prof["stance_model"])})' if prof.get("stance_model") else ""
    out = [f'<div class="card compare-side" id="side-{name}"><h2>{name.upper()}: '
           f'<a href="/sessions/{quote(sid, safe="")}"><code>{e(sid)}</code></a></h2>'
           f'<p>Verdict: <span class="badge {e(verdict)}" id="verdict-{name}">{e(verdict)}'
           f'</span> <span class="muted">head {side["rev"]} in {e(side["fsm"])}</span></p>'
           f'<p class="muted" id="profile-{name}">retrieval {e(prof.get("retrieval"))}, judge '
           f'{e(prof.get("judge"))}{model}</p>']
    for sub in side["subclaims"]:
        out.append(f'<h3><span class="badge {e(sub["verdict"])}">{e(sub["verdict"])}</span> '
                   f'[{e(sub["id"])}] {e(sub["c"])}</h3>')
        for ev in sub["evidence"]:
            only = str(ev["id"]) not in other
            tag = f' <span class="badge only">only in {name.upper()}</span>' if only else ""
            out.append(f'<div class="ev{" only" if only else ""}" data-ev="{e(ev["id"])}">'
                       f'{e(ev["text"])} <span class="muted">({e(ev["source"])}, relevance '
                       f'{float(ev["score"]):.3f})</span>{tag}</div>')
    if not side["subclaims"]:
        out.append('<p class="muted">No subclaims yet.</p>')
    out.append("</div>")
    return "".join(out)


def compare_page(data: dict[str, Any]) -> str:
    """The comparison as a page: the two sides in columns (stacked on a narrow screen),
    the relation, and the first revision where they differ with its changes."""
    a, b, first = data["a"], data["b"], data["first_difference"]
    same = data["same_revisions"]
    if first is None:
        where = f'<p id="first-difference">The two sessions hold the same {same} revisions.</p>'
    else:
        # One block per change, A above B: it reads on a phone as on a wide screen.
        rows = "".join(
            f'<li><code class="wrap">{e(c["path"])}</code> <span class="muted">{e(c["op"])}'
            f'</span><div class="wrap"><b>A</b> {e(_short(c["before"]))}</div>'
            f'<div class="wrap"><b>B</b> {e(_short(c["after"]))}</div></li>'
            for c in first["changes"])
        more = (f'<p class="muted">{first["total"] - len(first["changes"])} more changes</p>'
                if first["total"] > len(first["changes"]) else "")
        side = " · ".join(f"{n.upper()}: {e(s['fsm'])} {e(s['skill'] or '-')}"
                          if s else f"{n.upper()}: no revision {first['rev']}"
                          for n, s in (("a", first["a"]), ("b", first["b"])))
        where = (f'<p id="first-difference">Revisions 0–{same - 1} are the same; they first '
                 f'differ at <b>revision {first["rev"]}</b> ({side}).</p>' if same else
                 f'<p id="first-difference">They differ from <b>revision 0</b> on ({side}).</p>')
        if rows:
            where += (f'<details id="difference"><summary>What differs at revision '
                      f'{first["rev"]}</summary><ul class="changes">{rows}</ul></details>{more}')
    relation = f'<p id="relation">{e(data["relation"])}</p>' if data["relation"] else ""
    ca, cb = _cited(a), _cited(b)
    body = (f'<h1>Compare sessions</h1><div class="card" id="compare-summary">'
            f'<p><b>Claim A:</b> {e(a["claim"])}</p>'
            + (f'<p><b>Claim B:</b> {e(b["claim"])}</p>' if b["claim"] != a["claim"] else "")
            + f"{relation}{where}</div>"
            f'<div class="grid compare">{_column("a", a, cb)}{_column("b", b, ca)}</div>')
    return page("Compare sessions", body)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else pretty_short(value)
    return text if len(text) <= 300 else text[:297] + "..."


def pretty_short(value: Any) -> str:
    """JSON on one line (``null`` for nothing), as the rest of the inspector shows it."""
    return orjson.dumps(value).decode()


def _pair(request: Request) -> tuple[str, str]:
    pair = query_model(request, CompareQuery)  # a missing one is BAD_INPUT naming it
    return pair.a, pair.b


def compare_routes(service: Service) -> list[Route]:
    """``/compare`` (the page) and ``/api/v1/compare`` (its JSON), bound to ``service``."""

    async def call(fn: Callable[[], T]) -> T:
        return await run_in_threadpool(fn)

    def compared(request: Request) -> dict[str, Any]:
        a, b = _pair(request)
        return service.locked(lambda: compare_json(service.engine.store, a, b))

    async def html(request: Request) -> Response:
        return HTMLResponse(compare_page(await call(lambda: compared(request))))

    async def api(request: Request) -> Response:
        return JSON(await call(lambda: compared(request)))

    return [Route("/compare", html, methods=["GET"]),
            Route("/api/v1/compare", api, methods=["GET"])]
