"""Commands that only read sessions: show, history, sessions.

They open the session store alone (no skills, tools, evidence index or session limits),
and live apart from the commands that run the engine so that importing them does not
build those commands' options (``--deadline`` and ``--max-tool-calls`` need
``claimfsm.engine.limits``, which loads the tool runtime).
"""

from __future__ import annotations

import click

from claimfsm.cli.common import db_option, emit, fail, json_option, store
from claimfsm.engine.views import profile_text, revision_json, revision_line, session_summary

__all__ = ["history", "sessions", "show"]


@click.command()
@click.argument("sid")
@click.option("--rev", type=int, default=None, help="Show this revision instead of the head.")
@db_option
@json_option
def show(sid: str, rev: int | None, db: str, as_json: bool) -> None:
    """Show a session's head (or --rev N): state, verdict and evidence."""
    with store(db, as_json) as opened:
        r = opened.head(sid) if rev is None else opened.get(sid, rev)
        if as_json:
            emit(revision_json(r))
        else:
            click.echo("\n".join(session_summary(r)))


@click.command()
@click.argument("sid")
@db_option
@json_option
def history(sid: str, db: str, as_json: bool) -> None:
    """List every revision of SID, oldest first, with its tool events."""
    with store(db, as_json) as opened:
        revs = list(opened.history(sid))
        if as_json:
            emit([revision_json(r, full=False) for r in revs])
            return
        if revs:
            click.echo(profile_text(revs[-1]))
        before: str | None = None
        for r in revs:
            click.echo(revision_line(r, before))
            before = r.fsm


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
@db_option
@json_option
def sessions(q: str | None, fsm: str | None, verdict: str | None, limit: int,
             before: int | None, db: str, as_json: bool) -> None:
    """List sessions, newest first: number, id, state, verdict, revisions, last update
    and claim. The store is only read. --json prints {"items": [...], "next": SEQ or
    null}, the shape of the web inspector's GET /api/v1/sessions.
    """
    from pydantic import ValidationError

    from claimfsm.state.catalog import SummaryQuery

    if verdict is not None and verdict != "none":
        verdict = verdict.upper()
    try:
        query = SummaryQuery(q=q, fsm=fsm, verdict=verdict, limit=limit, before=before)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = {"q": "--query", "fsm": "--state"}.get(str(err["loc"][0]), str(err["loc"][0]))
        fail("BAD_INPUT", f"{field}: {err['msg']}", as_json=as_json)
        return
    with store(db, as_json) as opened:
        page = opened.summaries(query)
    if as_json:
        emit(page.to_json())
        return
    if not page.items:
        click.echo("no sessions" + (" match" if q or fsm or verdict else ""))
        return
    click.echo(f"{'#':>6}  {'session':<14} {'state':<12} {'verdict':<16} {'revs':>5}  "
               f"{'updated':<20} claim")
    for item in page.items:
        claim = item.claim if len(item.claim) <= 60 else item.claim[:59] + "…"
        click.echo(f"{item.seq:>6}  {item.sid:<14} {item.fsm:<12} {item.verdict or '-':<16} "
                   f"{item.revisions:>5}  {item.updated[:19]:<20} {claim}")
    if page.next is not None:
        click.echo(f"more: claimfsm sessions --before {page.next} (with the same filters)")
