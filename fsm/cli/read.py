"""Commands that only read sessions: show, history, sessions.

They open the session store alone (no skills, tools, evidence index or session limits),
and live apart from the commands that run the engine so that importing them does not
build those commands' options (``--deadline`` and ``--max-tool-calls`` need
``claimfsm.engine.limits``, which loads the tool runtime).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import click

from claimfsm.cli.common import db_option, emit, fail, json_option, store
from claimfsm.engine.views import (
    MAX_HISTORY_PAGE,
    profile_text,
    revision_json,
    revision_line,
    session_summary,
)

if TYPE_CHECKING:
    from claimfsm.state.store import StateStore

__all__ = ["history", "sessions", "show"]


@click.command()
@click.argument("sid")
@click.option("--rev", type=int, default=None, help="Show this revision instead of the head.")
@db_option
@json_option
def show(sid: str, rev: int | None, db: str, as_json: bool) -> None:
    """Show a session's head (or --rev N): state, verdict and evidence, and its lineage:
    the session it was forked from (SID@REV, when, what a what-if fork changed) and the
    sessions forked from it (--json: "forked_from": {sid, rev, at, changes} or null,
    "forks": [{sid, rev, at}]). Finding the forks reads every session's head."""
    from claimfsm.engine.lineage import lineage_json, lineage_text
    from claimfsm.engine.version import session_version

    with store(db, as_json) as opened:
        r = opened.head(sid) if rev is None else opened.get(sid, rev)
        version = session_version(opened, r)
        lineage = lineage_json(opened, r)
        if as_json:
            emit({**revision_json(r), "version": version, **lineage})
        else:
            click.echo("\n".join(session_summary(r)))
            click.echo(f"version: {version}")
            for line in lineage_text(lineage):
                click.echo(line)


# Without --limit, history is read and printed this many revisions at a time, so a
# long session costs memory for one chunk, not for all of it.
_CHUNK = 500


@click.command()
@click.argument("sid")
@click.option("--from", "start", type=click.IntRange(min=0), default=0, show_default=True,
              metavar="REV",
              help="The first revision to list (the next_offset of the page before).")
@click.option("--limit", type=click.IntRange(1, MAX_HISTORY_PAGE), default=None, metavar="N",
              help="List one page of N revisions and how to get the next; without it, "
                   "every revision from --from on.")
@db_option
@json_option
def history(sid: str, start: int, limit: int | None, db: str, as_json: bool) -> None:
    """List the revisions of SID, oldest first, with their tool events. A page (--from,
    --limit) takes time in proportion to its length, not to the session's. --json prints
    a list; with --limit {"items": [...], "total": N, "next_offset": REV or null}, the
    shape of the web inspector's GET /api/v1/sessions/SID/history.
    """
    with store(db, as_json) as opened:
        if as_json:
            _history_json(opened, sid, start, limit)
            return
        head = opened.head(sid)
        click.echo(profile_text(head))
        if start > head.rev:
            click.echo(f"no revision {start}: the head is {head.rev}")
            return
        # The state the first listed revision moved from.
        before = opened.get(sid, start - 1).fsm if start else None
        at = start
        while True:
            page = opened.history_page(sid, at, limit or _CHUNK)
            for r in page.items:
                click.echo(revision_line(r, before))
                before = r.fsm
            if page.next is None:
                return
            if limit is not None:
                click.echo(f"more: claimfsm history {shlex.quote(sid)} --from {page.next} "
                           f"--limit {limit}")
                return
            at = page.next


def _history_json(opened: StateStore, sid: str, start: int, limit: int | None) -> None:
    if limit is not None:
        page = opened.history_page(sid, start, limit)
        emit({"items": [revision_json(r, full=False) for r in page.items], "total": page.total,
              "next_offset": page.next})
        return
    items: list[dict[str, Any]] = []
    at: int | None = start
    while at is not None:
        page = opened.history_page(sid, at, _CHUNK)
        items.extend(revision_json(r, full=False) for r in page.items)
        at = page.next
    emit(items)


_VERDICTS = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED", "none")


@click.command()
@click.option("-q", "--query", "q", default=None,
              help="Only sessions whose claim contains this text (case-insensitive).")
@click.option("--state", "fsm", default=None, metavar="STATE",
              help="Only sessions whose head is in this state (DONE, FAILED, RETRIEVAL...).")
@click.option("--verdict", type=click.Choice(_VERDICTS, case_sensitive=False), default=None,
              help="Only sessions with this verdict; 'none': no verdict (yet).")
@click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True,
              help="Sessions per page.")
@click.option("--before", type=click.IntRange(min=0), default=None, metavar="SEQ",
              help="The page after: sessions created before SEQ (printed by the last page).")
@click.option("--deleted", is_flag=True,
              help="List the deleted sessions' tombstones instead (claimfsm delete, prune).")
@click.option("--version", "version", default=None, metavar="V",
              help="Only sessions on machine version V ('unknown': sessions stored before "
              "versions existed); see claimfsm diagram --version.")
@click.option("--waiting", is_flag=True,
              help="Only sessions that wait for a person (input or resume).")
@db_option
@json_option
def sessions(q: str | None, fsm: str | None, verdict: str | None, limit: int,
             before: int | None, deleted: bool, version: str | None, waiting: bool,
             db: str, as_json: bool) -> None:
    """List sessions, newest first: number, id, state, verdict, revisions, last update,
    machine version, the session it was forked from (SID@REV, - for none) and claim; a
    state marked * waits for a person. The store is only read. --json prints {"items":
    [...], "next": SEQ or null}, the shape of the web inspector's GET /api/v1/sessions
    (each item's status: WAITING, RUNNING or FINISHED; forked_from: {sid, rev, at} or
    null).

    With --deleted: the tombstones of deleted sessions, oldest deletion first (--json:
    {"items": [{sid, deleted_at, actor, head, fsm, last_hash}]}).
    """
    if deleted:
        _tombstones(db, as_json)
        return
    from pydantic import ValidationError

    from claimfsm.state.catalog import SummaryQuery

    if verdict is not None and verdict != "none":
        verdict = verdict.upper()
    try:
        query = SummaryQuery(q=q, fsm=fsm, verdict=verdict, limit=limit, before=before,
                             status="WAITING" if waiting else None)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = {"q": "--query", "fsm": "--state"}.get(str(err["loc"][0]), str(err["loc"][0]))
        fail("BAD_INPUT", f"{field}: {err['msg']}", as_json=as_json)
        return
    from claimfsm.engine.lineage import parents_of
    from claimfsm.engine.listing import versioned_summaries

    with store(db, as_json) as opened:
        page, versions = versioned_summaries(opened, query, version)
        parents = parents_of(opened, [item.sid for item in page.items])
    if as_json:
        out = page.to_json()
        for item in out["items"]:
            item["version"] = versions[item["sid"]]
            item["forked_from"] = parents[item["sid"]]
        emit(out)
        return
    if not page.items:
        click.echo("no sessions" + (" match" if q or fsm or verdict or version or waiting
                                    else ""))
        return
    click.echo(f"{'#':>6}  {'session':<14} {'state':<12} {'verdict':<16} {'revs':>5}  "
               f"{'updated':<20} {'version':<16} {'forked from':<18} claim")
    for item in page.items:
        claim = item.claim if len(item.claim) <= 60 else item.claim[:59] + "…"
        state = item.fsm + ("*" if item.status == "WAITING" else "")
        link = parents[item.sid]
        origin = f"{link['sid']}@{link['rev']}" if link else "-"
        click.echo(f"{item.seq:>6}  {item.sid:<14} {state:<12} {item.verdict or '-':<16} "
                   f"{item.revisions:>5}  {item.updated[:19]:<20} {versions[item.sid]:<16} "
                   f"{origin:<18} {claim}")
    if page.next is not None:
        click.echo(f"more: claimfsm sessions --before {page.next} (with the same filters)")


def _tombstones(db: str, as_json: bool) -> None:
    with store(db, as_json) as opened:
        stones = list(opened.tombstones())
    if as_json:
        emit({"items": [t.model_dump(mode="json") for t in stones]})
        return
    if not stones:
        click.echo("no deleted sessions")
        return
    click.echo(f"{'session':<14} {'deleted at':<26} {'actor':<16} {'head':>5} {'state':<10} hash")
    for t in stones:
        click.echo(f"{t.sid:<14} {t.deleted_at[:26]:<26} {t.actor:<16} {t.head:>5} "
                   f"{t.fsm:<10} {(t.last_hash or '-')[:16]}")
