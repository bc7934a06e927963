"""CLI options for a session's limits (``claimfsm start/verify --deadline --max-tool-calls``).

They land in the session's config (``deadline_s``, ``max_tool_calls``), so every process
that later steps the session applies the same limits (see ``claimfsm.engine.limits``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from claimfsm.engine.limits import MAX_DEADLINE_S, MAX_TOOL_CALLS

__all__ = ["limit_options", "limits_config"]

F = TypeVar("F", bound=Callable[..., Any])

def _finite(param: click.Parameter, value: float | None) -> float | None:
    # click's FloatRange lets nan through (no comparison with nan is true).
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number of seconds", param=param)
    return value


_deadline = click.option(
    "--deadline", "deadline", type=click.FloatRange(min=0, min_open=True, max=MAX_DEADLINE_S),
    default=None, callback=lambda _ctx, param, value: _finite(param, value),
    metavar="SECONDS",
    help="Fail the session (DEADLINE_EXCEEDED) once this many seconds have passed since "
    "it started; checked before each step and each tool call.",
)
_max_calls = click.option(
    "--max-tool-calls", "max_tool_calls", type=click.IntRange(min=0, max=MAX_TOOL_CALLS),
    default=None,
    metavar="N",
    help="Fail the session (BUDGET_EXCEEDED) when it would make more than N tool calls.",
)


def limit_options(fn: F) -> F:
    """Add ``--deadline`` and ``--max-tool-calls`` to a command."""
    return _deadline(_max_calls(fn))


def limits_config(deadline: float | None, max_tool_calls: int | None) -> dict[str, Any]:
    """The session-config entries for the given options (only those that were set)."""
    config: dict[str, Any] = {}
    if deadline is not None:
        config["deadline_s"] = deadline
    if max_tool_calls is not None:
        config["max_tool_calls"] = max_tool_calls
    return config
