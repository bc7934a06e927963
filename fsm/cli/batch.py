"""``claimfsm batch``: verify a file of claims, one session each, on Ray or in-process."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from claimfsm.cli.common import (
    db_option,
    emit,
    fail,
    json_option,
    on_version_option,
    profile_from,
    profile_options,
)
from claimfsm.cli.observing import log_format_option, otel_option
from claimfsm.cli.people import people_options

__all__ = ["batch"]


class _Term:
    """SIGTERM's handler during a batch: it notes the signal, and the next result (a
    point where no Ray call is running, which an exception raised inside would abort)
    raises ``KeyboardInterrupt``, to unwind the batch as Ctrl-C does; a second SIGTERM
    raises it at once."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.seen:
            raise KeyboardInterrupt
        self.seen = True

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if SIGTERM came."""
        if self.seen:
            raise KeyboardInterrupt


class _Progress:
    """``finished/total  rate claims/s  ETA`` on one rewritten stderr line (terminals only)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = 0.0
        self.finished = 0

    def __call__(self, finished: int, total: int, seconds: float) -> None:
        self.finished = finished
        now = time.monotonic()
        if not self.enabled or (now - self.shown < 0.1 and finished < total):
            return
        self.shown = now
        rate = finished / seconds if seconds > 0 else 0.0
        eta = f"{(total - finished) / rate:.0f}s" if rate > 0 else "?"
        click.echo(f"\r{finished}/{total} claims  {rate:.1f} claims/s  ETA {eta}   ",
                   nl=finished >= total, err=True)


@click.command()
@click.argument("claims_file", metavar="CLAIMS.jsonl",
                type=click.Path(dir_okay=False, path_type=Path))
@db_option
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Ray tasks running at once, at most the CPUs Ray reports (default: all "
              "of them); 0 runs every claim in this process.")
@click.option("--ray", "address", default=None, metavar="ADDRESS",
              help="Join this Ray cluster ('auto', or HOST:PORT of the head); default: "
              "start a local Ray for the run.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append each claim's result line (JSONL) here as it finishes; a re-run "
              "keeps the file to one line per claim id.")
@json_option
@profile_options
@on_version_option
@people_options
@otel_option
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve Prometheus metrics at http://127.0.0.1:PORT/metrics while the "
              "batch runs (steps, commits, conflicts, tool calls, errors, latencies, "
              "sessions by state).")
@log_format_option
def batch(claims_file: Path, db: str, workers: int | None, address: str | None,
          out: Path | None, as_json: bool, profile: dict[str, Any], on_version: str,
          otel: bool, metrics_port: int | None, log_format: str | None) -> None:
    """Verify every claim of CLAIMS.jsonl ({"id", "claim"} per line), one session each.

    Sessions go to --db, which every worker shares: a postgresql:// URL for a Ray
    cluster, or a SQLite file on one machine. Running the same command again resumes:
    claims already DONE are skipped, half-done ones continue from their last revision.
    Result lines ({"id", "sid", "verdict", "rev", "fsm", "status", "from_rev"}) are
    appended to --out as they finish (a re-run adds only what changed, and leaves one
    line per claim id); a summary ends the run. Without Ray installed the batch runs in-process.
    New sessions verify with the profile of --retrieval/--judge/--stance-model (or
    claimfsm.toml); every worker must see the same model file and evidence index.
    A half-done session started on another version of the machine is an error line
    (VERSION_MISMATCH) unless --on-version continue.

    With --review, claims whose verdict waits in REVIEW are counted `waiting` (not
    failed; a re-run does not start them again; `claimfsm input` finishes them), and
    the batch ticks in the background (due sessions advance).

    Exit 0 when every claim's session is DONE, 3 when the others all wait for a person,
    1 otherwise, 2 on bad input.
    """
    from claimfsm.batch import BatchInputError, read_claims, run_batch
    from claimfsm.batch.cluster import ray_available
    from claimfsm.batch.output import ResultFile
    from claimfsm.engine.errors import ClaimFsmError
    from claimfsm.engine.sources import SourceSet, find_sources
    from claimfsm.state.open import URL_SCHEMES, locate

    if workers == 0 and address is not None:
        fail("BAD_OPTION", "--ray joins a cluster, --workers 0 runs in-process: pick one",
             as_json=as_json)
    if address is not None and not db.startswith(URL_SCHEMES):
        click.echo("warning: --ray with a SQLite --db: workers on other machines would each "
                   "write a file of their own; use a postgresql:// URL for a cluster",
                   err=True)
    prof = profile_from(profile, as_json=as_json)
    try:
        claims = read_claims(claims_file)
    except BatchInputError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits
    if workers != 0 and not ray_available():
        click.echo("ray is not installed (pip install 'claimfsm[ray]'): running in-process",
                   err=True)
    sink: ResultFile | None = None
    if out is not None:
        try:
            sink = ResultFile(out)
        except ClaimFsmError as exc:
            claims.close()
            fail(exc.code, exc.msg, as_json=as_json)

    from claimfsm.cli.batch_observe import BatchWatch

    watch: BatchWatch | None = None
    term = _Term()

    def write(line: dict[str, Any]) -> None:
        if sink is not None:
            sink.write(line)
        if watch is not None:
            watch.claim(line)
        term.check()

    progress = _Progress(sys.stderr.isatty() and not as_json)
    complete = False
    # SIGTERM stops a batch as Ctrl-C does, so Ray is shut down and --out closed on the
    # way out (its default action ends the process before either).
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, term) if main else None
    try:
        # Parsed once, here: the location, the profile and the sources of the config file
        # (credentials as the names of variables each worker reads) travel to every
        # worker as they are.
        location = locate(db)
        sources = SourceSet.of(find_sources())
        watch = BatchWatch.open(location, otel=otel, metrics_port=metrics_port,
                                log_format=log_format, as_json=as_json)
        with watch.running(len(claims)) as observe:
            summary = run_batch(claims, location, workers=workers, address=address,
                                profile=prof, on_result=write, on_progress=progress,
                                on_version="continue" if on_version == "continue"
                                else "refuse",
                                observe=observe, tally=watch.tally, sources=sources)
        complete = True
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits
    except OSError as exc:
        fail("OPEN_FAILED", str(exc), as_json=as_json)
        raise
    except KeyboardInterrupt:
        how = "by SIGTERM " if term.seen else ""
        fail("INTERRUPTED", f"stopped {how}after {progress.finished} of {len(claims)} "
             "claims; run the same command again to resume (nothing is lost)",
             as_json=as_json)
        raise  # unreachable: fail exits
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        if watch is not None:
            watch.close()
        claims.close()
        if sink is not None:
            try:
                sink.close(complete=complete)
            except ClaimFsmError as exc:
                fail(exc.code, exc.msg, as_json=as_json)
    if as_json:
        emit(summary.model_dump(mode="json"))
    else:
        where = (f"ray, {summary.workers} workers, {summary.start_up_seconds:.1f} s start-up"
                 if summary.runner == "ray" else "in-process")
        click.echo(f"batch: {summary.claims} claims in {summary.seconds:.1f} s "
                   f"({summary.claims_per_s} claims/s, {where})")
        click.echo(f"  done {summary.done}, resumed {summary.resumed}, skipped "
                   f"{summary.skipped}, failed {summary.failed}, error {summary.error}"
                   + (f", waiting {summary.waiting}" if summary.waiting else ""))
        click.echo("  verdicts: " + (", ".join(f"{k} {v}" for k, v in summary.verdicts.items())
                                     or "-"))
    if not summary.ok:
        sys.exit(1)
    if summary.waiting:
        sys.exit(3)
