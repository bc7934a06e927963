"""``claimfsm bench slow-clients``: slow connections against a real ``claimfsm ui``
server, and whether a normal client is still served (docs/operations.md)."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from claimfsm.cli.common import fail

__all__ = ["bench_slow_clients"]


@click.command("slow-clients", short_help="Slow connections against the UI server.")
@click.option("--slow", type=click.IntRange(min=1), default=70, show_default=True,
              help="Slow-header connections, and as many slow-body ones.")
@click.option("--seconds", type=click.FloatRange(min=1), default=40.0, show_default=True,
              help="How long the slow connections trickle while a normal client asks.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the figures to this file as JSON.")
def bench_slow_clients(slow: int, seconds: float, json_file: str | None) -> None:
    """Hold --slow connections that send their headers a byte a second and --slow that
    send a declared body a byte a second against a `claimfsm ui` server (the default
    limits), while a normal client reads /api/v1/machine every half second; print how
    many slow connections are still open at the end, how many got 408, and the normal
    client's answers and latencies. Needs the ui extra."""
    try:
        from claimfsm.ui.bench_slow import run_slow_clients
    except ImportError as exc:
        fail("UI_UNAVAILABLE", f"the ui extra is not installed ({exc.name}): "
             "pip install 'claimfsm[ui]'", as_json=False)
        return
    figures = run_slow_clients(slow, seconds)
    for key, value in figures.items():
        click.echo(f"{key:<28} {value:>10}")
    if json_file is not None:
        try:
            Path(json_file).write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            fail("OUT_WRITE_FAILED", f"--json {json_file}: {exc.strerror or exc}",
                 as_json=False)
