"""Watching a running engine: OpenTelemetry traces of every step, Prometheus metrics and
structured logs (docs/operations.md). Nothing here is imported unless a command asks for
it (``--otel``, ``/metrics``, ``--log-format``); the driver only holds an observer or
``None``."""

from __future__ import annotations

from claimfsm._base.lazy import lazy_exports

__all__ = ["ObserveSpec", "Observer", "Tally", "log_event", "setup_logging"]

__getattr__ = lazy_exports(__name__, {
    "Observer": "claimfsm.observe.observer",
    "ObserveSpec": "claimfsm.observe.observer",
    "Tally": "claimfsm.observe.tally",
    "log_event": "claimfsm.observe.logs",
    "setup_logging": "claimfsm.observe.logs",
})
