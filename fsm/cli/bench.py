"""``claimfsm bench``, ``claimfsm fsck`` and ``claimfsm compact``.

``fsck`` and ``compact`` open only the session store (never the evidence index), and
refuse a ``--db`` that does not exist rather than create an empty one.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import orjson

from claimfsm.cli.common import emit, fail, json_option
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.state.fsck import fsck as fsck_store
from claimfsm.state.open import open_store
from claimfsm.state.store import CompactReport, StateStore

__all__ = ["bench", "compact", "fsck"]

_db = click.option(
    "--db", "db", default="claimfsm.db", show_default=True, type=click.Path(dir_okay=False),
    help="SQLite file holding the sessions, or a postgresql:// URL.",
)


@contextmanager
def _store(db: str, as_json: bool, *, readonly: bool = False) -> Iterator[StateStore]:
    try:
        store = open_store(db, create=False, readonly=readonly)
    except (ClaimFsmError, OSError) as exc:
        msg = str(exc)
        fail(getattr(exc, "code", "OPEN_FAILED"), msg if msg.startswith("--db") else f"--db: {msg}",
             as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield store
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
    finally:
        store.close()


@click.command()
@_db
@json_option
def fsck(db: str, as_json: bool) -> None:
    """Verify every session's hash chain; report the first broken link of each.

    Exit 0 when every chain verifies, 1 when any link is broken.
    """
    with _store(db, as_json, readonly=True) as store:
        report = fsck_store(store)
    if as_json:
        emit(report.model_dump(mode="json"))
    else:
        for p in report.problems:
            where = "-" if p.rev is None else str(p.rev)
            click.echo(f"{p.sid} rev {where}: {p.problem}: {p.detail}")
        status = "ok" if report.ok else f"BROKEN ({len(report.problems)} sessions)"
        click.echo(f"{status}: {report.sessions} sessions, {report.revisions} revisions checked")
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
    with _store(db, as_json) as store:
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


@click.command()
@click.option("--quick", is_flag=True, help="Fewer repetitions and sessions (under a minute).")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, writable=True),
              default=None, help="Also write the figures (median, _min, _max) to this file.")
@click.option("--reps", type=click.IntRange(1, 50), default=None,
              help="Repetitions per case (default 7, or 3 with --quick).")
@click.option("--dir", "where", type=click.Path(file_okay=False, exists=True), default=None,
              help="Put the SQLite files under this directory (the disk to measure fsync "
              "on; default: the system's temporary directory).")
def bench(quick: bool, json_file: str | None, reps: int | None, where: str | None) -> None:
    """Measure engine overhead, durability costs, reads, replay, storage and memory.

    Prints a table (median, min, max of several repetitions, and the goal of each
    figure); progress goes to stderr. See docs/bench.md.
    """
    from dataclasses import replace

    from claimfsm.bench.run import BenchConfig, format_table, run_bench

    config = BenchConfig.quick() if quick else BenchConfig()
    if reps is not None:
        config = replace(config, reps=reps)
    report = run_bench(config, progress=lambda msg: click.echo(f"bench: {msg}", err=True),
                       where=where)
    click.echo(format_table(report))
    meta = report.meta
    click.echo(f"\n{meta['cpus']} CPUs, Python {meta['python']}, SQLite {meta['sqlite']}, "
               f"{meta['platform']}; {meta['reps']} repetitions, {meta['seconds']} s")
    floors = meta.get("cli_floor_ms")
    if floors:
        # The part of cli_step_ms no change to the project can remove, on this machine.
        click.echo(f"cli floor (interpreter, pydantic, click, orjson, transitions, sqlite3; "
                   f"none of claimfsm): {statistics.median(floors):.0f} ms")
    if json_file is not None:
        Path(json_file).write_bytes(
            orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        click.echo(f"wrote {json_file}", err=True)
