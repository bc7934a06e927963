"""``claimfsm batch``: verify a file of claims, one session each, on Ray or in-process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO, Any

import click
import orjson

from claimfsm.cli.common import db_option, emit, fail, json_option, profile_from, profile_options

__all__ = ["batch"]


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
              help="Ray tasks running at once (default: this machine's CPUs); 0 runs "
              "every claim in this process.")
@click.option("--ray", "address", default=None, metavar="ADDRESS",
              help="Join this Ray cluster ('auto', or HOST:PORT of the head); default: "
              "start a local Ray for the run.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write each claim's result line (JSONL) here as it finishes.")
@json_option
@profile_options
def batch(claims_file: Path, db: str, workers: int | None, address: str | None,
          out: Path | None, as_json: bool, profile: dict[str, Any]) -> None:
    """Verify every claim of CLAIMS.jsonl ({"id", "claim"} per line), one session each.

    Sessions go to --db, which every worker shares: a postgresql:// URL for a Ray
    cluster, or a SQLite file on one machine. Running the same command again resumes:
    claims already DONE are skipped, half-done ones continue from their last revision.
    Result lines ({"id", "sid", "verdict", "rev", "fsm", "status", "from_rev"}) stream to
    --out; a summary ends the run. Without Ray installed the batch runs in-process.
    New sessions verify with the profile of --retrieval/--judge/--stance-model (or
    claimfsm.toml); every worker must see the same model file and evidence index.

    Exit 0 when every claim's session is DONE, 1 otherwise, 2 on bad input.
    """
    from claimfsm.batch import BatchInputError, read_claims, run_batch
    from claimfsm.batch.cluster import ray_available
    from claimfsm.engine.errors import ClaimFsmError
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
    count = (os.cpu_count() or 1) if workers is None else workers
    if count > 0 and not ray_available():
        click.echo("ray is not installed (pip install 'claimfsm[ray]'): running in-process",
                   err=True)
    sink: IO[bytes] | None = None
    if out is not None:
        try:
            sink = out.open("wb")
        except OSError as exc:
            fail("OUT_WRITE_FAILED", f"--out {out}: {exc.strerror or exc}", as_json=as_json)

    def write(line: dict[str, Any]) -> None:
        if sink is not None:
            sink.write(orjson.dumps(line) + b"\n")
            sink.flush()

    progress = _Progress(sys.stderr.isatty() and not as_json)
    try:
        # Parsed once, here: the location (and the profile) travel to every worker as is.
        summary = run_batch(claims, locate(db), workers=count, address=address, profile=prof,
                            on_result=write, on_progress=progress)
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits
    except OSError as exc:
        fail("OPEN_FAILED", str(exc), as_json=as_json)
        raise
    except KeyboardInterrupt:
        fail("INTERRUPTED", f"stopped after {progress.finished} of {len(claims)} claims; "
             "run the same command again to resume (nothing is lost)", as_json=as_json)
    finally:
        if sink is not None:
            sink.close()
    if as_json:
        emit(summary.model_dump(mode="json"))
    else:
        where = (f"ray, {summary.workers} workers, {summary.start_up_seconds:.1f} s start-up"
                 if summary.runner == "ray" else "in-process")
        click.echo(f"batch: {summary.claims} claims in {summary.seconds:.1f} s "
                   f"({summary.claims_per_s} claims/s, {where})")
        click.echo(f"  done {summary.done}, resumed {summary.resumed}, skipped "
                   f"{summary.skipped}, failed {summary.failed}, error {summary.error}")
        click.echo("  verdicts: " + (", ".join(f"{k} {v}" for k, v in summary.verdicts.items())
                                     or "-"))
    if not summary.ok:
        sys.exit(1)
