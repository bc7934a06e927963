"""Commands that run the engine on sessions: verify, start, rollback, fork (``step`` is in
``claimfsm.cli.step``, the read-only ones are in ``claimfsm.cli.read``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from claimfsm.cli.common import (
    actor_option,
    better_profile,
    db_option,
    durability_option,
    emit,
    engine,
    json_option,
    print_step,
    profile_options,
    record_option,
)
from claimfsm.cli.limits import limit_options, limits_config
from claimfsm.cli.observing import otel_option, traced
from claimfsm.cli.people import finish, people_options
from claimfsm.engine.views import (
    revision_json,
    revision_line,
)

if TYPE_CHECKING:  # an annotation: the engine's modules load when a command opens it
    from claimfsm.engine.config import Durability

__all__ = ["fork", "rollback", "start", "verify"]


@click.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@record_option
@limit_options
@profile_options
@people_options
@otel_option
@actor_option
def verify(claim: str, db: str, as_json: bool, durability: Durability, record: str | None,
           deadline: float | None, max_tool_calls: int | None,
           max_concurrent_tools: int | None, profile: dict[str, Any], otel: bool,
           actor: str | None) -> None:
    """Run a session for CLAIM to the end and print the verdict with its evidence.

    Exit 0 when the session reached DONE, 1 when it ended elsewhere (FAILED, or a step
    that could not commit); the output says why. Exit 3 (code WAITING, not an error)
    when it stops to wait for a person (REVIEW, a pause point): the output names the
    session and what it waits for; `claimfsm input` or `claimfsm resume` continues it.
    The verification profile (--retrieval, --judge, --stance-model, --review, pause
    points; defaults from claimfsm.toml) is stored in the session.
    """
    from claimfsm.cli import replay  # record/replay loads only when a command records

    rec = replay.open_recorder(record, as_json)
    hook = replay.with_recorder(None if as_json else print_step, rec)
    with engine(db, as_json, on_step=hook, durability=durability, profile=profile) as eng:
        head = eng.start(claim, config=limits_config(deadline, max_tool_calls,
                                                   max_concurrent_tools),
                         before_create=replay.start_record(rec, eng), actor=actor)
        if not as_json:
            click.echo(revision_line(head))
        with traced(eng, otel, as_json):
            head = eng.driver.run(head.sid, actor=actor)
        if not as_json:
            hint = better_profile(eng.profile)
            if hint:
                click.echo(hint, err=True)
        finish(eng, head, as_json)


@click.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@record_option
@limit_options
@profile_options
@people_options
@actor_option
def start(claim: str, db: str, as_json: bool, durability: Durability, record: str | None,
          deadline: float | None, max_tool_calls: int | None,
          max_concurrent_tools: int | None, profile: dict[str, Any],
          actor: str | None) -> None:
    """Create a session for CLAIM (revision 0, PARSE_CLAIM) and print its id. The
    verification profile is stored in the session; later steps use it."""
    from claimfsm.cli import replay  # record/replay loads only when a command records

    rec = replay.open_recorder(record, as_json)
    with engine(db, as_json, durability=durability, profile=profile) as eng:
        head = eng.start(claim, config=limits_config(deadline, max_tool_calls,
                                                   max_concurrent_tools),
                         before_create=replay.start_record(rec, eng), actor=actor)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(head.sid)


@click.command()
@click.argument("sid")
@click.option("--to", "to", type=int, required=True, help="Revision to rewind to.")
@click.option("--reopen", is_flag=True,
              help="Allow rolling back a FAILED session (recorded; the spent budget is kept).")
@db_option
@json_option
@durability_option
@actor_option
def rollback(sid: str, to: int, reopen: bool, db: str, as_json: bool,
             durability: Durability, actor: str | None) -> None:
    """Rewind SID: a new revision equal to revision --to (history is kept).

    The session's spent tool calls, rate buckets and deadline are never given back. A
    FAILED session is refused (SESSION_FAILED) unless --reopen.
    """
    with engine(db, as_json, seed=False, durability=durability, create=False) as eng:
        head = eng.driver.rollback(sid, to, reopen=reopen, actor=actor)
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
@profile_options
@actor_option
def fork(sid: str, at: int, db: str, as_json: bool, durability: Durability,
         profile: dict[str, Any], actor: str | None) -> None:
    """Fork SID at revision --at into a new session; prints the new id.

    The fork copies revisions 0..--at and commits one revision of its own (--at + 1,
    stamped now) recording its parent: `show` and `sessions` say "forked from SID@REV".
    A what-if fork: --retrieval, --judge, --stance-model (and the model options) change
    the parent's profile for the fork, which runs on with it from --at (`step`, `run`);
    its lineage lists what changed. Options not given keep the parent's; the config
    file is not read."""
    from claimfsm.engine.whatif import what_if_fork

    with engine(db, as_json, seed=False, durability=durability, create=False) as eng:
        head = what_if_fork(eng, sid, at, profile, actor=actor)
    # Printed once the store is closed: in `full`, closing is what syncs the fork's commit.
    if as_json:
        emit(revision_json(head, full=False))
    else:
        click.echo(head.sid)
