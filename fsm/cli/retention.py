"""``claimfsm delete`` and ``claimfsm prune``: erase one session, or every session that
finished before a date, leaving a tombstone each (docs/operations.md).

Both open the store for writing but never create one: a ``--db`` that does not exist is
``UNKNOWN_DB``. The bytes of what was deleted leave the file at the next ``claimfsm
compact``.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from claimfsm.cli.common import (
    actor_or_login,
    db_option,
    emit,
    existing_store,
    fail,
    json_option,
)
from claimfsm.engine.errors import BadInput

__all__ = ["delete", "prune"]

_actor = click.option(
    "--actor", default=None, metavar="NAME",
    help="Who deletes, kept in each tombstone (default: the login name).")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@click.command()
@click.argument("sid")
@_actor
@db_option
@json_option
def delete(sid: str, actor: str | None, db: str, as_json: bool) -> None:
    """Delete session SID: its revisions, events and the blobs no other session uses, in
    one transaction. A tombstone stays (sid, deleted time, actor, head, the last
    revision's hash): `fsck` lists it and `sessions --deleted` shows it. Forks of SID
    keep their own copies and are not touched. The id stays taken.

    The freed space, and the deleted bytes, leave the file at the next `claimfsm
    compact`. --json prints the tombstone (as DELETE /api/v1/sessions/SID).
    UNKNOWN_SESSION (exit 2) when SID is not a live session.
    """
    who = actor_or_login(actor, as_json)
    with existing_store(db, as_json) as store:
        stone = store.delete(sid, actor=who, at=_now())
    if as_json:
        emit(stone.model_dump(mode="json"))
        return
    digest = (stone.last_hash or "-")[:16]
    click.echo(f"deleted {stone.sid}: {stone.head + 1} revisions (head {stone.head}, "
               f"{stone.fsm}, hash {digest}), by {stone.actor} at {stone.deleted_at}")
    click.echo("run `claimfsm compact` to reclaim the space and drop the deleted bytes")


@click.command()
@click.option("--finished-before", "before", required=True, metavar="DATE",
              help="Delete sessions that finished (head DONE or FAILED) before this date: "
              "YYYY-MM-DD (midnight UTC) or an ISO 8601 time (no offset: UTC).")
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted; write nothing.")
@_actor
@db_option
@json_option
def prune(before: str, dry_run: bool, actor: str | None, db: str, as_json: bool) -> None:
    """Apply a retention period: delete every session whose head is in a final state
    (DONE, FAILED) with a timestamp before --finished-before, leaving a tombstone each.
    A session still running, waiting or retrying is never pruned. Deletes in batches
    (each one transaction that re-checks the session's head), then drops unused blobs;
    progress goes to a terminal's stderr. Stopped half-way, the store stays consistent
    and the same command finishes the job.

    --json prints {"before", "dry_run", "states", "matched", "deleted",
    "blobs_dropped", "skipped", "sessions"}. Run `claimfsm compact` afterwards to
    reclaim the space.
    """
    from claimfsm.engine.machine import DEFAULT_MACHINE
    from claimfsm.state.retention import parse_cutoff
    from claimfsm.state.retention import prune as prune_store

    try:
        cutoff = parse_cutoff(before)
    except BadInput as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        return
    who = actor_or_login(actor, as_json)
    finals = sorted(DEFAULT_MACHINE.finals)
    show = sys.stderr.isatty() and not as_json

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\rprune: {done:,} of {total:,} deleted", err=True, nl=done == total)

    with existing_store(db, as_json) as store:
        report = prune_store(store, cutoff, actor=who, at=_now(), states=finals,
                             dry_run=dry_run, progress=progress)
    if as_json:
        emit(report.model_dump(mode="json"))
        return
    if dry_run:
        for sid in report.sessions:
            click.echo(sid)
        click.echo(f"dry run: {report.matched} sessions finished before {report.before} "
                   "would be deleted; nothing was written")
        return
    for sid, why in report.skipped.items():
        click.echo(f"skipped {sid}: {why}", err=True)
    click.echo(f"deleted {report.deleted} of {report.matched} sessions finished before "
               f"{report.before}; {report.blobs_dropped} blobs dropped; run `claimfsm "
               "compact` to reclaim the space")
