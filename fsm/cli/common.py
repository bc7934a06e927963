"""Shared pieces of the CLI: options, JSON output, clean error exits, the engine context.

Command modules (``fsm/cli/main.py`` and its siblings) import from here, never from each other.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
import orjson

from fsm.driver import StepResult
from fsm.errors import ClaimFsmError
from fsm.runtime import Engine
from fsm.views import revision_line
from skills.tools.core import ToolError
from state.errors import StoreError

__all__ = [
    "db_option", "durability_option", "emit", "engine", "fail", "json_option", "print_step",
]

F = TypeVar("F", bound=Callable[..., Any])

db_option = click.option(
    "--db", "db", default="claimfsm.db", show_default=True, type=click.Path(dir_okay=False),
    help="SQLite file holding sessions and the evidence index, or a postgresql:// URL "
    "(sessions in PostgreSQL, evidence index in the SQLite file of its ?index=FILE "
    "parameter, else the demo corpus in memory).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
durability_option = click.option(
    "--durability", type=click.Choice(["full", "normal", "group"]), default="normal",
    show_default=True,
    help="SQLite durability: full = fsync per commit; normal = WAL, synced at checkpoints "
    "(a power cut may lose the last commits, never corrupt); group = batched fsyncs.",
)


def emit(obj: Any) -> None:
    """Print one JSON document (orjson, keys in insertion order)."""
    click.echo(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode())


def fail(code: str, msg: str, *, as_json: bool, exit_code: int = 2) -> None:
    """Report an error with its code and exit (no traceback)."""
    if as_json:
        emit({"error": {"code": code, "msg": msg}})
    else:
        click.echo(f"error: {code}: {msg}", err=True)
    sys.exit(exit_code)


@contextmanager
def engine(db: str, as_json: bool, **kw: Any) -> Iterator[Engine]:
    """Open the engine and turn contract errors into clean exits."""
    try:
        eng = Engine.open(db, **kw)
    except (ClaimFsmError, StoreError, ToolError, OSError) as exc:
        fail(getattr(exc, "code", "OPEN_FAILED"), str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield eng
    except (ClaimFsmError, StoreError, ToolError) as exc:
        fail(exc.code, str(exc), as_json=as_json)
    finally:
        eng.close()


def print_step(result: StepResult) -> None:
    """One line for a step: the committed revision, or the refused envelope's code."""
    if result.revision is not None:
        click.echo(revision_line(result.revision, result.before))
    elif result.envelope.e is not None:
        click.echo(f"   -  {result.before:<26} {result.skill or '-':<18} "
                   f"{result.envelope.s} {result.envelope.e.code}: {result.envelope.e.msg}")
