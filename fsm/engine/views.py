"""What the CLI prints: JSON shapes scripts rely on, and short human renderings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claimfsm.engine.profile import ProfileError, profile_of
from claimfsm.state.holds import status_of, waiting_json
from claimfsm.state.model import Revision

if TYPE_CHECKING:
    from claimfsm.engine.step import StepResult

__all__ = [
    "MAX_HISTORY_PAGE", "profile_json", "profile_text", "revision_json", "revision_line",
    "session_summary", "status_json", "step_json", "verdict_json",
]

_FINALS = frozenset({"DONE", "FAILED"})  # the claim machine's; a custom one's read RUNNING


def status_json(head: Revision) -> dict[str, Any]:
    """``{"status": "WAITING"|"RUNNING"|"FINISHED", "waiting": {...}|None}``: whether a
    session holds, and what for (kind ``input`` or ``pause``, state, since, ...)."""
    return {"status": status_of(head.state, _FINALS), "waiting": waiting_json(head.state)}


#: The most revisions one page of history holds (``claimfsm history --limit``, the HTTP
#: API's ``limit``): a page is one response, held whole.
MAX_HISTORY_PAGE = 1000


def verdict_json(head: Revision) -> dict[str, Any]:
    """``verify --json``: ``{sid, verdict, rev, fsm, subclaims: [{id, c, verdict, evidence}]}``."""
    st = head.state
    judged = {j["id"]: j for j in st.judgments}
    subclaims = []
    for claim in st.subclaims:
        j = judged.get(claim["id"], {})
        cites = set(j.get("cites", []))
        evidence = [
            {"id": e["id"], "text": e["text"], "source": e.get("source", ""),
             "score": e.get("score", 0.0)}
            for e in st.evidence.get(claim["id"], [])
            if not cites or e["id"] in cites
        ]
        subclaims.append({"id": claim["id"], "c": claim["c"],
                          "verdict": j.get("verdict", "NOT_ENOUGH_INFO"), "evidence": evidence})
    verdict = st.verdict["label"] if st.verdict else None
    out: dict[str, Any] = {"sid": head.sid, "verdict": verdict, "rev": head.rev, "fsm": head.fsm,
                           "subclaims": subclaims, **status_json(head)}
    if st.verdict:  # who decided: the engine, or a reviewer (docs/review.md)
        out["provenance"] = st.verdict.get("provenance", "engine")
    if st.error:
        out["error"] = st.error
    return out


def step_json(result: StepResult) -> dict[str, Any]:
    """``step --json`` (and the UI API's step): ``{sid, before, after, skill, committed,
    rev, envelope}``."""
    return {"sid": result.sid, "before": result.before, "after": result.after,
            "skill": result.skill, "committed": result.committed,
            "rev": result.revision.rev if result.revision else None,
            "envelope": result.envelope.to_dict()}


def profile_json(rev: Revision) -> dict[str, Any] | None:
    """The verification profile the session ran with (``None``: unreadable config)."""
    try:
        return profile_of(rev.state.config).to_dict()
    except ProfileError:
        return None


def profile_text(rev: Revision) -> str:
    """``profile: retrieval lexical, judge lexical`` for people."""
    try:
        return "profile: " + profile_of(rev.state.config).describe()
    except ProfileError as exc:
        return f"profile: unreadable ({exc.msg})"


def revision_json(rev: Revision, *, full: bool = True) -> dict[str, Any]:
    """A revision as JSON (``full=False`` leaves the state out); ``profile`` is the
    verification profile of the session."""
    out: dict[str, Any] = {"sid": rev.sid, "rev": rev.rev, "parent_rev": rev.parent_rev,
                           "fsm": rev.fsm, "skill": rev.skill, "ts": rev.ts,
                           "envelope": rev.envelope, "events": rev.events,
                           "profile": profile_json(rev), **status_json(rev)}
    if full:
        out["state"] = rev.state.model_dump(mode="json")
    return out


def revision_line(rev: Revision, before: str | None = None) -> str:
    """One line per revision: ``rev  BEFORE -> AFTER  skill  s [code]``."""
    env = rev.envelope or {}
    s = env.get("s", "-")
    code = (env.get("e") or {}).get("code", "")
    move = f"{before} -> {rev.fsm}" if before and before != rev.fsm else rev.fsm
    tools = sum(1 for e in rev.events if e.get("type") == "ToolInvoked")
    extra = f"  tools={tools}" if tools else ""
    return f"{rev.rev:>4}  {move:<26} {rev.skill or '-':<18} {s}{' ' + code if code else ''}{extra}"


def session_summary(head: Revision) -> list[str]:
    """The verdict, its reasons and the cited evidence, for people."""
    data = verdict_json(head)
    lines = [f"session {head.sid}  rev {head.rev}  {head.fsm}", profile_text(head)]
    if data.get("error"):
        lines.append(f"error: {data['error']['code']}: {data['error']['msg']}")
    if data["waiting"]:
        w = data["waiting"]
        what = (f"input ({w['input']})" if w["kind"] == "input"
                else f"resume (paused {w['when']} {w['state']})")
        lines.append(f"WAITING for {what} since {w['since']}"
                     + (f", until {w['until']}" if w.get("until") else ""))
    if data["verdict"]:
        lines.append(f"verdict: {data['verdict']} (by {data['provenance']})")
        review = (head.state.verdict or {}).get("review")
        if review and review.get("reason"):
            lines.append(f"  review: {review['decision']} by {review['actor']}: "
                         f"{review['reason']}")
    for reason in (head.state.verdict or {}).get("reasons", []):
        lines.append(f"  - {reason}")
    for sub in data["subclaims"]:
        lines.append(f"[{sub['id']}] {sub['verdict']}: {sub['c']}")
        for ev in sub["evidence"][:3]:
            text = ev["text"] if len(ev["text"]) <= 160 else ev["text"][:157] + "..."
            lines.append(f"    {ev['id']} ({ev['source']}, {ev['score']:.3f}): {text}")
    return lines

