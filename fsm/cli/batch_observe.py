"""What ``claimfsm batch`` watches: a trace of every step linked to the batch's span
(``--otel``), ``/metrics`` on ``--metrics-port``, a log line per claim (``--log-format``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from claimfsm.cli.common import fail
from claimfsm.cli.observing import start_logging, tracing_for

if TYPE_CHECKING:
    from claimfsm.observe.observer import ObserveSpec
    from claimfsm.observe.tally import Tally
    from claimfsm.observe.traces import Tracing
    from claimfsm.state.open import Location

__all__ = ["BatchWatch"]


@dataclass
class BatchWatch:
    """The batch's tracing, tally and metrics server (each ``None`` when not asked for)."""

    tracing: Tracing | None
    tally: Tally | None
    server: Any
    logs: bool

    @classmethod
    def open(cls, where: Location, *, otel: bool, metrics_port: int | None,
             log_format: str | None, as_json: bool) -> BatchWatch:
        """Start what the options ask for (the metrics server listens from here on)."""
        tracing = tracing_for(otel, as_json)
        start_logging(log_format)
        tally = server = None
        if metrics_port is not None:
            try:
                from claimfsm.observe.metrics import StoreGauges, registry_for, serve_metrics
                from claimfsm.observe.tally import Tally
            except ImportError as exc:
                fail("METRICS_UNAVAILABLE", f"--metrics-port: {exc.name} is not installed "
                     "(pip install 'claimfsm[ui]')", as_json=as_json)
            from claimfsm.engine.machine import DEFAULT_MACHINE

            tally = Tally()
            registry = registry_for(tally, StoreGauges.at(where, DEFAULT_MACHINE.finals))
            try:
                server = serve_metrics(registry, metrics_port)
            except OSError as exc:
                fail("PORT_IN_USE", f"--metrics-port {metrics_port}: cannot listen on "
                     f"127.0.0.1:{metrics_port} ({exc.strerror or exc})", as_json=as_json)
            bound = getattr(server, "server_port", metrics_port)
            click.echo(f"claimfsm batch: metrics at http://127.0.0.1:{bound}/metrics", err=True)
        return cls(tracing, tally, server, log_format is not None)

    @contextmanager
    def running(self, claims: int) -> Iterator[ObserveSpec | None]:
        """Around the run: the batch's span; yields what every worker watches."""
        from claimfsm.observe.logs import log_event

        log_event("batch_started", claims=claims)
        if self.tracing is None and self.tally is None and not self.logs:
            yield None
            return
        from claimfsm.observe.observer import ObserveSpec

        counts = self.tally is not None
        if self.tracing is None:
            yield ObserveSpec(tally=counts)
            return
        # Local Ray workers inherit the variables; a cluster's are told the endpoint.
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or None
        with self.tracing.batch_span({"claimfsm.claims": claims}) as carrier:
            yield ObserveSpec(otel=True, endpoint=endpoint, link=tuple(sorted(carrier.items())),
                              tally=counts)

    def claim(self, line: dict[str, Any]) -> None:
        """Log one claim's result line (its sid, rev, status and error code)."""
        if not self.logs:
            return
        from claimfsm.observe.logs import log_event

        error = line.get("error") or {}
        code = error.get("code") if isinstance(error, dict) else None
        log_event("claim", logging.INFO if code is None else logging.WARNING, id=line.get("id"),
                  sid=line.get("sid"), rev=line.get("rev"), status=line.get("status"),
                  code=code, verdict=line.get("verdict"))

    def close(self) -> None:
        """Stop the metrics server; send the spans still buffered."""
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        if self.tracing is not None:
            self.tracing.flush()
