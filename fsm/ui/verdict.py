"""The verdict card as a reviewer reads it, on the live page and in the report: the label
with a sign (never colour alone), the doubts the judge raised as warnings beside it, the
reasons in plain words, each evidence sentence with its own stance and labelled scores,
the sentences below :data:`RELEVANCE_FLOOR` folded away, and the engine's own terms
(raw reasons, the envelope's keys) behind a "details" toggle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from claimfsm.engine.views import profile_text, verdict_json
from claimfsm.skills.stance.combine import CHECK_PREFIX
from claimfsm.skills.verdict_aggregate import Verdict, warnings
from claimfsm.state.model import Revision
from claimfsm.ui.html import e, mark_terms, pretty
from claimfsm.ui.timeline import time_cell
from claimfsm.ui.wording import ICONS, LABEL_WORDS, check_words, reason_words

__all__ = ["RELEVANCE_FLOOR", "doubts", "verdict_panel"]

#: Evidence whose relevance (the share of the subclaim's key terms it covers, the
#: ``score`` of EXTRACT) is below this is folded away unless the judge cites it: it names
#: too little of the claim to bear on it (docs/ui.md).
RELEVANCE_FLOOR = 0.4

Doubt = tuple[str, str, str, str]


def doubts(head: Revision) -> list[Doubt]:
    """``(subclaim, check, detail, evidence id)`` for every doubt the judge raised: the
    verdict's warnings (``verdict_aggregate.warnings``) and the checks that decided a
    judgment, whatever the label (a SUPPORTS verdict's doubt is shown too)."""
    found: list[Doubt] = []
    v = head.state.verdict
    if v and "label" in v:
        found += warnings(Verdict.model_construct(label=v["label"],
                                                  reasons=list(v.get("reasons", [])),
                                                  cites=list(v.get("cites", []))))
    for j in head.state.judgments:
        for r in j.get("reasons", []):
            if r.startswith(CHECK_PREFIX):
                eid, _, rest = r[len(CHECK_PREFIX):].partition(": ")
                check, _, detail = rest.partition(": ")
                found.append((str(j.get("id")), check, detail, eid))
    return list(dict.fromkeys(found))


def _label(label: str, ident: str = "") -> str:
    # The label text stays exactly the engine's (scripts and tests read it); the sign
    # and the plain words beside it are for people.
    attr = f' id="{ident}"' if ident else ""
    return (f'<span class="badge {e(label)}"><span aria-hidden="true">{ICONS.get(label, "")}'
            f"</span> <span{attr}>{e(label)}</span></span>")


def _warnings(found: Iterable[Doubt]) -> str:
    items = "".join(f'<li><span class="warn-icon" aria-hidden="true">⚠</span> '
                    f"<b>Warning ({e(sub)}):</b> {e(check_words(check, detail))} "
                    f'<span class="muted">(sentence <code>{e(eid)}</code>)</span></li>'
                    for sub, check, detail, eid in found)
    return (f'<ul class="warnings" id="warnings" role="alert" aria-label="doubts the judge '
            f'raised">{items}</ul>') if items else ""


def _sentence(ev: dict[str, Any], stance: dict[str, Any] | None, cited: bool, claim: str,
              links: bool) -> str:
    doc = str(ev.get("doc_id") or str(ev["id"]).split("#")[0])
    link = (f' <a href="/documents/{quote(doc, safe="")}">{e(doc)}</a>' if links
            else f" <code>{e(doc)}</code>")
    scores = [f'<span class="score">relevance {float(ev.get("score", 0.0)):.2f}</span>']
    if stance is not None:
        label = str(stance.get("label"))
        scores.insert(0, f'<span class="stance {e(label)}">{ICONS.get(label, "")} stance: '
                         f'{e(LABEL_WORDS.get(label, label))} {float(stance["score"]):.2f}</span>')
    tag = ' <span class="badge cited">cited</span>' if cited else ""
    return (f'<div class="ev" data-id="{e(ev["id"])}"><span class="evidence">'
            f'{mark_terms(ev["text"], claim)}</span><div class="ev-meta">{" · ".join(scores)}'
            f'{tag} <span class="muted">{e(ev.get("source", ""))}</span>{link}</div></div>')


def _evidence(head: Revision, sub: dict[str, Any], links: bool) -> str:
    judgment = next((j for j in head.state.judgments if j.get("id") == sub["id"]), {})
    stances = {s["id"]: s for s in judgment.get("stances", [])}
    cites = set(judgment.get("cites", []))
    shown: list[tuple[bool, str]] = []
    folded: list[tuple[bool, str]] = []
    for ev in head.state.evidence.get(sub["id"], []):
        cited = ev["id"] in cites
        html = _sentence(ev, stances.get(ev["id"]), cited, head.state.claim, links)
        (shown if cited or float(ev.get("score", 0.0)) >= RELEVANCE_FLOOR else folded).append(
            (not cited, html))
    out = [html for _, html in sorted(shown, key=lambda x: x[0])]
    if folded:
        out.append(f'<details class="below-floor"><summary>{len(folded)} sentence'
                   f'{"s" if len(folded) > 1 else ""} below the relevance floor '
                   f"({RELEVANCE_FLOOR:.2f})</summary>{''.join(h for _, h in folded)}"
                   "</details>")
    return "".join(out) or '<p class="muted">No evidence found.</p>'


def _engine_terms(head: Revision) -> str:
    """The engine's own words: the raw reasons and the head's envelope keys."""
    v = head.state.verdict or {}
    raw = {"verdict.reasons": v.get("reasons", []),
           "judgments": [{"id": j.get("id"), "verdict": j.get("verdict"),
                          "confidence": j.get("confidence"), "reasons": j.get("reasons")}
                         for j in head.state.judgments],
           "envelope": head.envelope}
    return ('<details class="engine-terms" id="engine-terms"><summary>details (the '
            "engine's terms)</summary><p class=\"muted\">Envelope keys: <code>s</code> status, "
            "<code>d</code> the skill's output, <code>e</code> its error, <code>rb</code> "
            "what a failed step rolls back (<code>rb=state</code>: the whole state, "
            "<code>rb=tools</code>: the tool results), <code>sp</code> the revision and "
            "state it commits, <code>tr</code> a transition.</p>"
            f"<pre>{e(pretty(raw))}</pre></details>")


def verdict_panel(head: Revision, *, links: bool = True) -> str:
    """The verdict with its warnings and plain-word reasons, then each subclaim's
    evidence: every sentence with its stance and relevance, cited ones first, those
    below the relevance floor folded; the engine's terms behind a toggle."""
    data = verdict_json(head)
    verdict = data["verdict"]
    out = [f'<div id="verdict"><p class="muted">{e(profile_text(head))}</p>']
    if data.get("error"):
        err = data["error"]
        out.append(f'<p><span class="badge error">✗ {e(err.get("code"))}</span> '
                   f"{e(err.get('msg'))}</p>")
    if data.get("waiting"):
        w = data["waiting"]
        what = (f"input ({w.get('input')})" if w["kind"] == "input"
                else f"resume (paused {w.get('when')} {w['state']})")
        out.append(f'<p id="waiting"><span class="badge WAITING">⏸ WAITING</span> for '
                   f"{e(what)} since {time_cell(str(w.get('since')))}</p>")
    found = doubts(head)
    if verdict:
        review = (head.state.verdict or {}).get("review") or {}
        why = f": {review['reason']}" if review.get("reason") else ""
        flag = (' <span class="badge doubt">⚠ with doubts</span>' if found else "")
        out.append(f'<p class="verdict-line">Verdict: {_label(verdict, "verdict-label")}{flag}'
                   f' <span id="provenance">by {e(data.get("provenance"))}{e(why)}</span></p>')
        out.append(_warnings(found))
        reasons = [r for r in (head.state.verdict or {}).get("reasons", [])
                   if not r.startswith("warning: ")]
        if reasons:
            out.append('<ul class="reasons">' + "".join(
                f"<li>{e(reason_words(r))}</li>" for r in reasons) + "</ul>")
    else:
        out.append(f'<p class="muted">No verdict yet (the session is in {e(head.fsm)}).</p>')
        out.append(_warnings(found))
    judged = {j.get("id") for j in head.state.judgments}
    for sub in data["subclaims"]:
        label = sub["verdict"] if sub["id"] in judged else "not judged yet"
        out.append(f'<h3 class="subclaim">{_label(label)} [{e(sub["id"])}] {e(sub["c"])}</h3>'
                   f"{_evidence(head, sub, links)}")
    out.append(_engine_terms(head) + "</div>")
    return "".join(out)
