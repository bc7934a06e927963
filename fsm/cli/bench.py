"""``claimfsm bench`` and its benchmarks (``batch``, ``prune``, ``ui``, ``review``,
``observe``; ``compat`` and ``slow-clients`` have modules of their own).
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from claimfsm.cli.common import fail

__all__ = ["bench"]


def _writable(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a --json file that cannot be written before the benchmark runs, not after
    minutes of it (its figures would be lost)."""
    if value is None:
        return None
    path = Path(value)
    parent = path.parent
    if not parent.is_dir():
        fail("NOT_FOUND", f"--json {value}: no directory {parent}", as_json=False)
    if path.is_dir():
        fail("OUT_WRITE_FAILED", f"--json {value}: a directory", as_json=False)
    if not os.access(path if path.exists() else parent, os.W_OK):
        fail("OUT_WRITE_FAILED", f"--json {value}: not writable here", as_json=False)
    return value


def _json_file(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    # Every benchmark's --json names a file to write, unlike the other commands' --json
    # flag (print JSON): a benchmark's table is for people, its figures are kept for later.
    return click.option(
        "--json", "json_file", type=click.Path(dir_okay=False), default=None,
        callback=_writable, expose_value=True,
        help=f"Also write {what} to this file as JSON (the table still prints); its "
        "folder is checked before the benchmark runs.")


def _write_json(path: str, figures: Any) -> None:
    data = orjson.dumps(figures, option=orjson.OPT_INDENT_2) + b"\n"
    try:
        Path(path).write_bytes(data)
    except OSError as exc:  # checked before the run, but a disk can fill up meanwhile
        fail("OUT_WRITE_FAILED", f"--json {path}: {exc.strerror or exc} (the table above "
             "holds the figures)", as_json=False)
    click.echo(f"wrote {path}", err=True)


@click.group(invoke_without_command=True, subcommand_metavar="[COMMAND [ARGS]...]")
@click.option("--quick", is_flag=True, help="Fewer repetitions and sessions (under a minute).")
@_json_file("the figures (median, _min, _max)")
@click.option("--reps", type=click.IntRange(1, 50), default=None,
              help="Repetitions per case (default 7, or 3 with --quick).")
@click.option("--dir", "where", type=click.Path(file_okay=False, exists=True), default=None,
              help="Put the SQLite files under this directory (the disk to measure fsync "
              "on; default: the system's temporary directory).")
@click.pass_context
def bench(ctx: click.Context, quick: bool, json_file: str | None, reps: int | None,
          where: str | None) -> None:
    """Measure engine overhead, durability costs, reads, replay, storage and memory.

    Prints a table (median, min, max of several repetitions, and the goal of each
    figure); progress goes to stderr. See docs/bench.md.

    With a command, run another benchmark instead (its options follow its name):
    `claimfsm bench batch` (batch runs on Ray, PostgreSQL commits; docs/scale.md) or
    `claimfsm bench ui` (the web inspector on a large store; docs/ui.md).
    """
    if ctx.invoked_subcommand is not None:
        given = [name for name, value in (("--quick", quick), ("--json", json_file),
                                          ("--reps", reps), ("--dir", where))
                 if value not in (None, False)]
        if given:
            # They would be silently ignored: say where they belong instead.
            raise click.UsageError(
                f"{', '.join(given)}: options of `claimfsm bench` itself; those of "
                f"`claimfsm bench {ctx.invoked_subcommand}` go after its name", ctx)
        return
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
        _write_json(json_file, report.to_json())


@bench.command("batch",
               short_help="Claims/s of `claimfsm batch` on Ray, PostgreSQL commits/s.")
@click.option("--pg", metavar="URL", envvar="CLAIMFSM_PG_URL", show_envvar=True, default=None,
              help="PostgreSQL server for the PostgreSQL cases and the commit rates (each "
              "case in a schema of its own, dropped afterwards); without it they are left "
              "out.")
@click.option("--claims", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Demo claims per case (the bundled ones, repeated).")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A Climate-FEVER folder (corpus.jsonl, dev.jsonl): its claims run the "
              "same cases against its corpus. Skipped when it holds no dev.jsonl.")
@click.option("--data-claims", type=click.IntRange(min=1), default=300, show_default=True,
              help="Climate-FEVER dev claims per case (the first ones).")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs per case, in alternation; the best counts.")
@click.option("--commits", type=click.IntRange(min=1), default=600, show_default=True,
              help="Commits per writer process (PostgreSQL commit rates, 1 and 8 writers).")
@_json_file("the report (machine, claims, commits, goals)")
def bench_batch(pg: str | None, claims: int, data: Path | None, data_claims: int,
                repeat: int, commits: int, json_file: str | None) -> None:
    """Measure `claimfsm batch`: claims/s serial on SQLite and on Ray (SQLite, PostgreSQL),
    and PostgresStore compare-and-set commits/s with 1 and 8 writer processes.

    Prints a line per case and whether each goal was met. `make bench-batch` runs it
    against a throwaway PostgreSQL cluster. See docs/scale.md.

    Exit 0 when every goal is met, 1 when one is missed.
    """
    from claimfsm.batch.bench import format_table, run_bench

    report = run_bench(pg=pg, claims=claims, data=data, data_claims=data_claims,
                       repeat=repeat, commits=commits)
    click.echo(format_table(report))
    if json_file is not None:
        _write_json(json_file, report)
    if not all(report["goals"].values()):
        sys.exit(1)


@bench.command("prune", short_help="claimfsm prune on 100,000 finished sessions.")
@click.option("--sessions", type=click.IntRange(min=100), default=100_000, show_default=True,
              help="Sessions in the store (1 in 100 left running, never pruned).")
@click.option("--pg", metavar="URL", envvar="CLAIMFSM_PG_URL", show_envvar=True, default=None,
              help="PostgreSQL server for the PostgreSQL case (in a schema of its own, "
              "dropped afterwards); without it the case is left out.")
@click.option("--dir", "where", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to build the SQLite store (default: a temp folder; removed after).")
@_json_file("the figures")
def bench_prune(sessions: int, pg: str | None, where: Path | None,
                json_file: str | None) -> None:
    """Measure `claimfsm prune`: build a store of SESSIONS sessions through the store API,
    prune those finished before a date (all but the running 1%), then `compact`; wall
    seconds of each part and the store's size before and after, on SQLite and
    PostgreSQL. `make bench-prune` runs it against a throwaway PostgreSQL cluster. See
    docs/operations.md.
    """
    from claimfsm.bench.prune import format_table, run_bench

    report = run_bench(sessions, pg or None, where,
                       progress=lambda msg: click.echo(msg, err=True))
    click.echo(format_table(report))
    if json_file is not None:
        _write_json(json_file, report)


@bench.command("ui", short_help="Page times of the web inspector on a large store.")
# At least 4: the deep-page figures read the page before the session half-way down.
@click.option("--sessions", type=click.IntRange(min=4), default=100_000, show_default=True,
              help="Sessions in the store (it is built once, then grown to this size).")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path),
              default=Path(".cache/ui-bench.db"), show_default=True,
              help="The SQLite store to build, keep and measure.")
@_json_file("the figures")
def bench_ui(sessions: int, db: Path, json_file: str | None) -> None:
    """Measure the web inspector on a large store: page times over real HTTP (first,
    deep and last pages, a filter, a search, the API listing, a session of 100
    revisions) and, with selenium and Chromium, that session page in a browser.

    Needs the ui extra. See docs/ui.md.
    """
    try:
        import uvicorn  # noqa: F401

        from claimfsm.ui.bench import format_table, run_bench
    except ImportError as exc:
        fail("UI_UNAVAILABLE", f"the ui extra is not installed ({exc.name}): "
             "pip install 'claimfsm[ui]'", as_json=False)
        return
    figures = run_bench(db, sessions, progress=lambda msg: click.echo(msg, err=True))
    click.echo(format_table(figures))
    if json_file is not None:
        _write_json(json_file, figures)


def _register() -> None:
    # In a module of its own (it stands on batch and replay); its imports wait for its run.
    from claimfsm.cli.bench_compat import bench_compat
    from claimfsm.cli.bench_http import bench_slow_clients

    bench.add_command(bench_compat)
    bench.add_command(bench_slow_clients)


_register()

@bench.command("review", short_help="Page times of the review queue on a large store.")
@click.option("--sessions", type=click.IntRange(min=2), default=100_000, show_default=True,
              help="Sessions in the store (it is built once, then grown to this size).")
@click.option("--every", type=click.IntRange(min=1), default=100, show_default=True,
              help="One session in this many waits in REVIEW.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path),
              default=Path(".cache/review-bench.db"), show_default=True,
              help="The SQLite store to build, keep and measure.")
@_json_file("the figures")
def bench_review(sessions: int, every: int, db: Path, json_file: str | None) -> None:
    """Measure the review queue page (/review) on a large store over real HTTP: first,
    half-way and last pages, the state, verdict and age filters, the first page on a cold
    catalog, and the store's read path alone. Exits 1 when a page misses 200 ms.

    Needs the ui extra. See docs/ui.md and docs/review.md.
    """
    try:
        import uvicorn  # noqa: F401

        from claimfsm.ui.bench import format_table
        from claimfsm.ui.bench_review import run_bench
    except ImportError as exc:
        fail("UI_UNAVAILABLE", f"the ui extra is not installed ({exc.name}): "
             "pip install 'claimfsm[ui]'", as_json=False)
        return
    figures = run_bench(db, sessions, every, progress=lambda msg: click.echo(msg, err=True))
    click.echo(format_table({k: v for k, v in figures.items() if k != "goals"}))
    click.echo("goals: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}"
                                     for k, ok in figures["goals"].items()))
    if json_file is not None:
        _write_json(json_file, figures)
    if sessions >= every and not all(figures["goals"].values()):
        sys.exit(1)

@bench.command("observe", short_help="Step cost with traces, metrics and logs off and on.")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Interleaved rounds of every case; the figure is their median.")
@click.option("--sessions", type=click.IntRange(min=1), default=20, show_default=True,
              help="Demo sessions run to DONE per case and round.")
@_json_file("the figures")
def bench_observe(rounds: int, sessions: int, json_file: str | None) -> None:
    """Measure what watching a step costs: µs per step with no observer (the default),
    with counts for /metrics, with OpenTelemetry spans (the SDK's in-memory exporter)
    and with all of them plus JSON logs, on an in-memory store. The trace cases need
    the otel extra (left out without it). See docs/operations.md.
    """
    from claimfsm.bench.observe import format_table, run_bench

    report = run_bench(rounds, sessions, progress=lambda msg: click.echo(msg, err=True))
    click.echo(format_table(report))
    if json_file is not None:
        _write_json(json_file, report)
