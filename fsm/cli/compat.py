"""``claimfsm check-compat``: before a deploy, which stored sessions would today's code
treat differently (docs/versioning.md)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import click

from claimfsm.cli.common import emit, fail, json_option, store

__all__ = ["check_compat"]


class _Progress:
    """``checked/total  rate sessions/s  ETA`` on one rewritten stderr line (terminals)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.began = self.shown = time.monotonic()

    def tick(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.shown < 0.1 and done < self.total):
            return
        self.shown = now
        rate = done / (now - self.began) if now > self.began else 0.0
        eta = f"{(self.total - done) / rate:.0f}s" if rate > 0 else "?"
        width = 30
        filled = width * done // max(1, self.total)
        click.echo(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} sessions  "
                   f"{rate:.0f}/s  ETA {eta}   ", nl=done >= self.total, err=True)


def _is_record(path: Path) -> bool:
    # A folder of records may hold other JSONL (fixtures/ has the demo corpus): a record
    # starts with its header line.
    try:
        with path.open("rb") as fh:
            return fh.read(16).startswith(b'{"t":"header"')
    except OSError:
        return False


@click.command("check-compat")
@click.argument("records_dir", metavar="[RECORDS_DIR]", required=False,
                type=click.Path(exists=True, file_okay=True, path_type=Path))
@click.option("--db", "db", default=None, type=click.Path(dir_okay=False),
              help="Check the sessions of this store (a SQLite file, opened read-only, or a "
              "postgresql:// URL) instead of record files.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Processes checking at once (default: one per CPU; 1 checks in this "
              "process). Each opens the store read-only itself.")
@json_option
def check_compat(records_dir: Path | None, db: str | None, jobs: int | None,
                 as_json: bool) -> None:
    """Replay stored sessions (--db) or the records under RECORDS_DIR in tools mode
    against today's code, and say per session: `same`, `diverges at rev N (PATH,
    expected, actual)` or `cannot continue (state gone, no migration)`, then a summary.

    A session is affected when it is open and not `same`, or when it diverges although
    it is on today's machine version (or has none): behaviour changed without a version
    bump. Exit 1 when any session is affected, 0 otherwise, 2 on bad input. The store is
    never written. A progress bar goes to stderr on a terminal (not with --json).
    --json prints {"version", "sessions": [...], "summary": {...}}.
    """
    from claimfsm.engine.bindings import DEFAULT_BINDINGS
    from claimfsm.engine.errors import ClaimFsmError
    from claimfsm.engine.machine import DEFAULT_MACHINE
    from claimfsm.engine.version import machine_version
    from claimfsm.replay.compat import CompatCheck, CompatSummary, checks_in_parallel
    from claimfsm.replay.errors import RecordError
    from claimfsm.replay.source import find_records

    if (records_dir is None) == (db is None):
        fail("BAD_OPTION", "give either --db or RECORDS_DIR (one of them)", as_json=as_json)
    version = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    summary = CompatSummary(version)
    out: list[dict[str, object]] = []

    def report(checks: Iterator[CompatCheck], total: int) -> None:
        bar = _Progress(total, sys.stderr.isatty() and not as_json)
        for n, check in enumerate(checks, start=1):
            summary.add(check)
            if as_json:
                out.append(check.to_json())
            else:
                if bar.enabled:
                    click.echo("\r\033[K", nl=False, err=True)
                click.echo(check.line())
            bar.tick(n)

    if db is not None:
        with store(db, as_json) as opened:  # checks the store is there, and lists it
            sids = list(opened.sessions())
        try:
            report(checks_in_parallel(sids, jobs, db=db), len(sids))
        except ClaimFsmError as exc:  # a worker could not open or read the store
            fail(exc.code, str(exc), as_json=as_json)
    else:
        assert records_dir is not None
        try:
            paths = [records_dir] if records_dir.is_file() else find_records(records_dir)
        except RecordError as exc:
            fail(exc.code, str(exc), as_json=as_json)
            return
        records = [str(p) for p in paths if _is_record(p)]
        report(checks_in_parallel(records, jobs), len(records))
    if as_json:
        emit({"version": version, "sessions": out, "summary": summary.to_json()})
    else:
        click.echo(summary.line())
    if summary.affected:
        sys.exit(1)
