"""The timeline of a session's revisions, on the live page and in the report: each move
with what happened in plain words (the envelope's raw keys are one click away, in the
revision's detail), how long the step took (from the revision times), its tool calls
grouped per tool with their durations, and the exact time, which the live page also
shows as a relative one ("3 min ago")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from claimfsm.state.model import Revision
from claimfsm.ui.html import e
from claimfsm.ui.wording import rollback_words, status_words

__all__ = ["actor_of", "duration_text", "time_cell", "timeline", "tool_calls", "tool_groups"]


def tool_calls(rev: Revision) -> list[dict[str, Any]]:
    """The revision's tool calls: tool, ok, code, duration, attempt."""
    return [ev for ev in rev.events if ev.get("type") == "ToolInvoked"]


def duration_text(ms: float) -> str:
    """``0.4 ms``, ``38 ms``, ``1.2 s``, ``2 min 5 s``."""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{int(ms // 60_000)} min {int(ms % 60_000 // 1000)} s"


def _when(ts: str) -> datetime | None:
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def time_cell(ts: str) -> str:
    """A ``<time>`` with the exact timestamp on hover; to the second in the text (the
    live page's script turns it into "3 min ago")."""
    when = _when(ts)
    text = when.strftime("%Y-%m-%d %H:%M:%S") if when else ts
    return f'<time datetime="{e(ts)}" title="{e(ts)}">{e(text)}</time>'


def tool_groups(rev: Revision) -> list[dict[str, Any]]:
    """The revision's tool calls grouped per tool, in first-call order: ``{tool, calls,
    ms, failed: [codes], each: [ms]}``. A call's duration is recorded in whole
    milliseconds (rounded down), so ``ms`` 0 means every call took under 1 ms."""
    groups: dict[str, dict[str, Any]] = {}
    for c in tool_calls(rev):
        g = groups.setdefault(str(c.get("tool")), {"tool": str(c.get("tool")), "calls": 0,
                                                   "ms": 0, "failed": [], "each": []})
        g["calls"] += 1
        ms = int(c.get("duration_ms") or 0)
        g["ms"] += ms
        g["each"].append(ms)
        if not c.get("ok"):
            g["failed"].append(str(c.get("code") or "error"))
    return list(groups.values())


def _tools_cell(rev: Revision) -> str:
    items = []
    for g in tool_groups(rev):
        took = (f"{g['ms']} ms" if g["ms"] else
                "under 1 ms" if g["calls"] == 1 else "each under 1 ms")
        fail = (f' <span class="fail">✗ {len(g["failed"])} failed '
                f'({e(", ".join(dict.fromkeys(g["failed"])))})</span>' if g["failed"]
                else " ✓")
        each = ", ".join(f"{ms} ms" if ms else "<1 ms" for ms in g["each"])
        items.append(f'<span class="tool" title="each call: {e(each)}">{e(g["tool"])}'
                     f'{" ×" + str(g["calls"]) if g["calls"] > 1 else ""} · {took}{fail}</span>')
    return f'<div class="tools">{"<br>".join(items)}</div>' if items else ""


def _rollback_cell(rev: Revision) -> str:
    rewind = next((ev for ev in rev.events if ev.get("type") in ("Rewind", "Forked")), None)
    if rewind is not None and rewind["type"] == "Forked":  # a fork's own first revision
        src = rewind.get("from") or {}
        return e(f"forked from {src.get('sid')}@{src.get('rev')}")
    if rewind is not None:
        return e(f"rewind to {rewind.get('to', '?')}" + (" (reopen)" if rewind.get("reopen")
                                                          else ""))
    return e(rollback_words((rev.envelope or {}).get("rb")))


_SIGNS = {"ok": "✓", "retry": "↻", "error": "✗"}


def actor_of(rev: Revision) -> str | None:
    """Who the revision records as having asked for it (an API key's name, a
    reviewer), whatever its kind: start, step, rewind, fork, input; ``None``: nobody."""
    for ev in rev.events:
        actor = ev.get("actor")
        if isinstance(actor, str):
            return actor
    return None


def timeline(revisions: Sequence[Revision], *, actions: bool, selected: int | None = None,
             head: Revision | None = None) -> str:
    """Each of ``revisions``: move, skill, what happened, rollback, retries, how long the
    step took, tool calls, time. ``head`` (default the last of them) is the session's
    newest revision, when ``revisions`` is one page of a longer history."""
    head = revisions[-1] if head is None else head
    rows = []
    before: Revision | None = None
    for rev in revisions:
        env = rev.envelope or {}
        s = env.get("s")
        code = (env.get("e") or {}).get("code", "")
        retry = rev.state.retry
        retries = f"{retry.attempts} ({e(retry.code)})" if retry is not None else ""
        move = (f"{e(before.fsm)} → {e(rev.fsm)}" if before and before.fsm != rev.fsm
                else e(rev.fsm))
        status = (f'<span class="badge {e(s)}">{_SIGNS.get(str(s), "")} '
                  f"{e(status_words(s, code))}</span>" if s else "started")
        who = actor_of(rev)
        if who is not None:
            status += f' <span class="by muted">by {e(who)}</span>'
        a, b = (_when(before.ts) if before else None), _when(rev.ts)
        took = (f'<span class="took">{duration_text((b - a).total_seconds() * 1000)}</span>'
                if a and b else "")
        buttons = ""
        if actions:
            buttons = (f'<button class="small" data-rollback="{rev.rev}" '
                       f'title="a new head equal to this revision">rollback here</button> '
                       f'<button class="small" data-fork="{rev.rev}" '
                       f'title="a new session from this revision">fork here</button>')
        sel = " sel" if selected == rev.rev else ""
        rows.append(f'<tr class="rev{sel}" data-rev="{rev.rev}" data-fsm="{e(rev.fsm)}" '
                    f'id="rev-{rev.rev}" tabindex="0">'
                    f"<td>{rev.rev}</td><td>{move}</td><td>{e(rev.skill or '-')}</td>"
                    f"<td>{status}</td><td>{_rollback_cell(rev)}</td><td>{retries}</td>"
                    f"<td>{took}</td><td>{_tools_cell(rev)}</td>"
                    f'<td class="muted">{time_cell(rev.ts)}</td>'
                    + (f"<td>{buttons}</td>" if actions else "") + "</tr>")
        before = rev
    head_cells = ("<th>rev</th><th>move</th><th>skill</th><th>what happened</th>"
                  "<th>rolled back</th><th>retries</th><th>took</th><th>tool calls</th>"
                  "<th>time</th>" + ("<th></th>" if actions else ""))
    return (f'<div class="scroll-x"><table id="timeline" data-head="{head.rev}"><thead><tr>'
            f"{head_cells}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
