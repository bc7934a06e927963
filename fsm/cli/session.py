"""Session commands: verify, start, step, show, history, sessions, rollback, fork."""

from __future__ import annotations

import sys
from typing import Any

import click

from fsm.cli.common import (
    better_profile,
    db_option,
    durability_option,
    emit,
    engine,
    fail,
    json_option,
    print_step,
    profile_options,
    record_option,
    store,
)
from fsm.cli.limits import limit_options, limits_config
from fsm.views import (
    profile_text,
    revision_json,
    revision_line,
    session_summary,
    step_json,
    verdict_json,
)

__all__ = ["fork", "history", "rollback", "sessions", "show", "start", "step", "verify"]


@click.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@record_option
@limit_options
@profile_options
def verify(claim: str, db: str, as_json: bool, durability: str, record: str | None,
           deadline: float | None, max_tool_calls: int | None,
           profile: dict[str, Any]) -> None:
    """Run a session for CLAIM to the end and print the verdict with its evidence.

    Exit 0 when the session reached DONE, 1 when it ended elsewhere (FAILED, or a step
    that could not commit); the output says why. The verification profile (--retrieval,
    --judge, --stance-model; defaults from claimfsm.toml) is stored in the session.
    """
    from fsm.cli import replay  # record/replay loads only when a command records

    rec = replay.open_recorder(record, as_json)
    hook = replay.with_recorder(None if as_json else print_step, rec)
    with engine(db, as_json, on_step=hook, durability=durability, profile=profile) as eng:
        head = eng.start(claim, config=limits_config(deadline, max_tool_calls),
                         before_create=replay.start_record(rec, eng))
        if not as_json:
            click.echo(revision_line(head))
        head = eng.driver.run(head.sid)
        if as_json:
            emit(verdict_json(head))
        else:
            click.echo("\n".join(session_summary(head)))
            hint = better_profile(eng.profile)
            if hint:
                click.echo(hint, err=True)
        if head.fsm != "DONE":
            sys.exit(1)


@click.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@record_option
@limit_options
@profile_options
def start(claim: str, db: str, as_json: bool, durability: str, record: str | None,
          deadline: float | None, max_tool_calls: int | None,
          profile: dict[str, Any]) -> None:
    """Create a session for CLAIM (revision 0, PARSE_CLAIM) and print its id. The
    verification profile is stored in the session; later steps use it."""
    from fsm.cli import replay  # record/replay loads only when a command records

    rec = replay.open_recorder(record, as_json)
    with engine(db, as_json, durability=durability, profile=profile) as eng:
        head = eng.start(claim, config=limits_config(deadline, max_tool_calls),
                         before_create=replay.start_record(rec, eng))
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(head.sid)


@click.command()
@click.argument("sid")
@db_option
@json_option
@durability_option
@record_option
def step(sid: str, db: str, as_json: bool, durability: str, record: str | None) -> None:
    """Fire one transition of session SID (exit 1 if the step failed)."""
    with engine(db, as_json, durability=durability, create=False) as eng:
        if record is not None:
            from fsm.cli import replay

            eng.driver.on_step = replay.recorder_for_session(record, eng, sid, as_json)
        result = eng.driver.step(sid)
        if as_json:
            emit(step_json(result))
        else:
            print_step(result)
        if result.envelope.s != "ok":
            sys.exit(1)


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

    from state.catalog import SummaryQuery

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


@click.command()
@click.argument("sid")
@click.option("--to", "to", type=int, required=True, help="Revision to rewind to.")
@click.option("--reopen", is_flag=True,
              help="Allow rolling back a FAILED session (recorded; the spent budget is kept).")
@db_option
@json_option
@durability_option
def rollback(sid: str, to: int, reopen: bool, db: str, as_json: bool, durability: str) -> None:
    """Rewind SID: a new revision equal to revision --to (history is kept).

    The session's spent tool calls, rate buckets and deadline are never given back. A
    FAILED session is refused (SESSION_FAILED) unless --reopen.
    """
    with engine(db, as_json, seed=False, durability=durability, create=False) as eng:
        head = eng.driver.rollback(sid, to, reopen=reopen)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(f"{sid}: rev {head.rev} = rev {to} ({head.fsm})")


@click.command()
@click.argument("sid")
@click.option("--at", "at", type=int, required=True, help="Revision the fork starts from.")
@db_option
@json_option
@durability_option
def fork(sid: str, at: int, db: str, as_json: bool, durability: str) -> None:
    """Fork SID at revision --at into a new session; prints the new id."""
    with engine(db, as_json, seed=False, durability=durability, create=False) as eng:
        head = eng.driver.fork(sid, at)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(head.sid)
