"""CLI options for a session's limits (``claimfsm start/verify --deadline --max-tool-calls
--max-concurrent-tools``).

They land in the session's config (``deadline_s``, ``max_tool_calls``,
``max_concurrent_tools``), so every process
that later steps the session applies the same limits (see ``claimfsm.engine.limits``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from claimfsm.engine.limits import DEFAULT_CONCURRENT_TOOLS, MAX_DEADLINE_S, MAX_TOOL_CALLS
from claimfsm.skills.tools.gather import MAX_CONCURRENT_TOOLS

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

_concurrent = click.option(
    "--max-concurrent-tools", "max_concurrent_tools",
    type=click.IntRange(min=1, max=MAX_CONCURRENT_TOOLS), default=None, metavar="N",
    help="Run at most N of a step's independent tool calls at once (default "
    f"{DEFAULT_CONCURRENT_TOOLS}; 1: one after another). Records do not depend on it.",
)


def limit_options(fn: F) -> F:
    """Add ``--deadline``, ``--max-tool-calls`` and ``--max-concurrent-tools``."""
    return _deadline(_max_calls(_concurrent(fn)))


def limits_config(deadline: float | None, max_tool_calls: int | None,
                  max_concurrent_tools: int | None = None) -> dict[str, Any]:
    """The session-config entries for the given options (only those that were set)."""
    config: dict[str, Any] = {}
    if max_concurrent_tools is not None:
        config["max_concurrent_tools"] = max_concurrent_tools
    if deadline is not None:
        config["deadline_s"] = deadline
    if max_tool_calls is not None:
        config["max_tool_calls"] = max_tool_calls
    return config
