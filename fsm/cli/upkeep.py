"""``claimfsm fsck`` and ``claimfsm compact``: the session store's chain check and its
upkeep.

Both open only the session store (never the evidence index), and refuse a ``--db`` that
does not exist rather than create an empty one. A module of their own, apart from the
benchmarks they used to share one with: they are the store's commands, not measurements.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from claimfsm.cli.common import emit, existing_store, json_option
from claimfsm.state.fsck import fsck as fsck_store
from claimfsm.state.store import CompactReport

__all__ = ["compact", "fsck"]

_db = click.option(
    "--db", "db", default="claimfsm.db", show_default=True, type=click.Path(dir_okay=False),
    help="SQLite file holding the sessions, or a postgresql:// URL.",
)


@click.command()
@_db
@json_option
def fsck(db: str, as_json: bool) -> None:
    """Verify every session's hash chain; report the first broken link of each.

    Deleted sessions are listed as such (`deleted SID ...`, JSON "deleted"), not as
    damage. Exit 0 when every chain verifies, 1 when any link is broken.
    """
    with existing_store(db, as_json, readonly=True) as store:
        report = fsck_store(store)
    if as_json:
        emit(report.model_dump(mode="json"))
    else:
        for p in report.problems:
            where = "-" if p.rev is None else str(p.rev)
            click.echo(f"{p.sid} rev {where}: {p.problem}: {p.detail}")
        for t in report.deleted:
            click.echo(f"deleted {t.sid}: at {t.deleted_at} by {t.actor} (head {t.head}, "
                       f"{t.fsm}, hash {(t.last_hash or '-')[:16]})")
        status = "ok" if report.ok else f"BROKEN ({len(report.problems)} sessions)"
        gone = f", {len(report.deleted)} deleted" if report.deleted else ""
        click.echo(f"{status}: {report.sessions} sessions, {report.revisions} revisions "
                   f"checked{gone}")
    if not report.ok:
        sys.exit(1)


@click.command()
@click.argument("sid", required=False)
@click.option("--no-prune", is_flag=True, help="Keep blobs that no revision references.")
@_db
@json_option
def compact(sid: str | None, no_prune: bool, db: str, as_json: bool) -> None:
    """Rewrite storage of SID (or every session) without changing any revision.

    Each session's chain is verified before and after; a broken one is left untouched
    and listed (exit 1: run `claimfsm fsck`). Unreferenced blobs are dropped.
    """
    with existing_store(db, as_json) as store:
        # Both backends take ``prune``; the protocol's compact does not.
        run: Callable[..., CompactReport] = store.compact
        report = run(sid, prune=not no_prune)
    if as_json:
        emit(report.model_dump(mode="json"))
    else:
        click.echo(f"compacted {report.sessions} sessions: {report.rewritten} rows rewritten, "
                   f"{report.blobs_dropped} blobs dropped")
        for name in report.skipped:
            click.echo(f"skipped {name}: its chain does not verify (run claimfsm fsck)", err=True)
    if report.skipped:
        sys.exit(1)
