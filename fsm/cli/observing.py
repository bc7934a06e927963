"""The options that watch a command's steps: ``--otel`` (traces), ``--log-format``
(structured logs), and the helpers that attach them to an engine (docs/operations.md).

Nothing from OpenTelemetry is imported unless traces are asked for: by ``--otel`` or by
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) in the
environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from claimfsm.cli.common import fail

if TYPE_CHECKING:
    from claimfsm.engine.runtime import Engine
    from claimfsm.observe.traces import Tracing

__all__ = ["log_format_option", "otel_option", "start_logging", "traced", "tracing_for"]

F = TypeVar("F", bound=Callable[..., Any])
_ENV = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def otel_option(f: F) -> F:
    """``--otel``: send a trace of every step over OTLP/HTTP."""
    return click.option(
        "--otel", is_flag=True,
        help="Send an OpenTelemetry trace of every step (a span per step, a child span "
        "per tool call) over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default "
        "http://localhost:4318). On without this flag when that variable is set. Needs "
        "the otel extra.")(f)


def log_format_option(f: F) -> F:
    """``--log-format json|text``: one log line per event on stderr."""
    return click.option(
        "--log-format", type=click.Choice(["json", "text"]), default=None,
        help="Log one line per event (each step, with sid, rev and code) on stderr: json "
        "(one object per line) or text. Default: no event log.")(f)


def start_logging(log_format: str | None) -> None:
    """Turn the event log on in ``log_format`` (``None``: leave it off)."""
    if log_format is not None:
        from claimfsm.observe.logs import setup_logging

        setup_logging("json" if log_format == "json" else "text")


def tracing_for(otel: bool, as_json: bool) -> Tracing | None:
    """This process's tracing when asked for (``--otel`` or the environment), else None.

    ``--otel`` without the extra is ``OTEL_UNAVAILABLE``; the variable alone without it
    is a warning (the variable may be meant for another program)."""
    if not otel and not any(os.environ.get(name, "").strip() for name in _ENV):
        return None
    try:
        from claimfsm.observe.observer import process_tracing

        return process_tracing()
    except ImportError as exc:
        if otel:
            fail("OTEL_UNAVAILABLE", f"--otel: the otel extra is not installed ({exc.name}): "
                 "pip install 'claimfsm[otel]'", as_json=as_json)
        click.echo("warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not "
                   "installed: no traces", err=True)
        return None


@contextmanager
def traced(eng: Engine, otel: bool, as_json: bool) -> Iterator[None]:
    """Trace the steps ``eng`` runs inside the block (when asked for); the spans are
    sent before the block is left."""
    tracing = tracing_for(otel, as_json)
    if tracing is None:
        yield
        return
    from claimfsm.observe.observer import Observer

    eng.driver.observer = Observer(tracing=tracing)
    try:
        yield
    finally:
        eng.driver.observer = None
        tracing.flush()
