"""What the driver needs from whoever watches its steps (``claimfsm.observe`` builds one).

The driver holds a :class:`StepObserver` or ``None``; with ``None`` a step costs one
attribute check more than it did before observers existed, and no telemetry library is
imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from claimfsm.engine.step import StepResult
from claimfsm.state.model import Revision

__all__ = ["StepObserver"]


class StepObserver(Protocol):
    """Runs one step for the driver: ``fire(head)`` does the work; the observer wraps it
    (a span, a timer, a log line) and returns its result unchanged. It must never raise
    for its own failures: a broken exporter must not fail a session's step."""

    def step(self, head: Revision, fire: Callable[[Revision], StepResult]) -> StepResult: ...
