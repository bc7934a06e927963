"""OpenTelemetry traces: one trace per session step, a child span per tool call.

Needs the ``otel`` extra; only imported when tracing is asked for (``--otel`` or
``OTEL_EXPORTER_OTLP_ENDPOINT``). A step's span is the root of its own trace; when the
step runs for a batch, the span links to the batch's span, whose context travels to the
Ray workers as a W3C ``traceparent`` carrier (:func:`Tracing.carrier`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Link, Span, SpanContext, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from claimfsm.engine.step import StepResult
from claimfsm.state.model import Revision

__all__ = ["Tracing", "endpoint_from_env"]

_PROPAGATOR = TraceContextTextMapPropagator()
_EMPTY = otel_context.Context()


def endpoint_from_env() -> str | None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces-only variable) when set."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


class Tracing:
    """A tracer provider of its own (the process-wide one is left alone) and the spans
    the engine makes with it."""

    def __init__(self, exporter: SpanExporter, *, batch: bool = True) -> None:
        name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or "claimfsm"
        self.provider = TracerProvider(resource=Resource.create({"service.name": name}))
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("claimfsm")

    @classmethod
    def otlp(cls, endpoint: str | None = None) -> Tracing:
        """Spans sent over OTLP/HTTP (protobuf), batched, to ``endpoint`` (its
        ``/v1/traces``) or else where the standard ``OTEL_EXPORTER_OTLP_*`` variables say
        (default ``http://localhost:4318``)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        if endpoint:
            return cls(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces"))
        return cls(OTLPSpanExporter())

    def flush(self) -> None:
        """Send what is buffered (a Ray worker flushes after each task: it may be killed)."""
        self.provider.force_flush()

    def shutdown(self) -> None:
        """Flush and stop the exporter."""
        self.provider.shutdown()

    # -- the batch's span and its carrier ------------------------------------------------

    @contextmanager
    def batch_span(self, attributes: Mapping[str, Any]) -> Iterator[dict[str, str]]:
        """A span over a whole batch; yields the carrier its steps link to."""
        with self.tracer.start_as_current_span("claimfsm.batch", context=_EMPTY,
                                               attributes=dict(attributes)) as span:
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
            yield carrier

    @staticmethod
    def linked(carrier: Mapping[str, str] | None) -> SpanContext | None:
        """The span context a carrier holds (``None`` for none or a broken one)."""
        if not carrier:
            return None
        found = trace.get_current_span(_PROPAGATOR.extract(dict(carrier))).get_span_context()
        return found if found.is_valid else None

    # -- steps and tool calls ----------------------------------------------------------

    def start_step(self, head: Revision, link: SpanContext | None) -> Span:
        """The span of one step of ``head``'s session, a root of its own trace."""
        attributes: dict[str, Any] = {"claimfsm.sid": head.sid, "claimfsm.rev": head.rev,
                                      "claimfsm.state": head.fsm}
        return self.tracer.start_span(
            "claimfsm.step", context=_EMPTY, attributes=attributes,
            links=[Link(link, {"claimfsm.link": "batch"})] if link is not None else None)

    @staticmethod
    def end_step(span: Span, result: StepResult) -> None:
        """What the step did, on its span; ends it."""
        env = result.envelope
        span.set_attribute("claimfsm.skill", result.skill or "")
        span.set_attribute("claimfsm.status", env.s)
        span.set_attribute("claimfsm.committed", result.committed)
        span.set_attribute("claimfsm.next_state", result.after)
        if result.revision is not None:
            span.set_attribute("claimfsm.committed_rev", result.revision.rev)
        if env.e is not None:
            span.set_attribute("claimfsm.code", env.e.code)
        if env.rb is not None:
            span.set_attribute("claimfsm.rollback", env.rb)
        if env.s == "error":
            span.set_status(Status(StatusCode.ERROR, env.e.code if env.e else "error"))
        span.end()

    def tool_span(self, parent: Span, event: Mapping[str, Any], seconds: float) -> None:
        """A finished tool call as a child span of the step's (the call has just ended)."""
        end = time.time_ns()
        code = event.get("code")
        span = self.tracer.start_span(
            f"claimfsm.tool {event.get('tool', '')}",
            context=trace.set_span_in_context(parent), start_time=end - int(seconds * 1e9),
            attributes={"claimfsm.tool": str(event.get("tool", "")),
                        "claimfsm.attempt": int(event.get("attempt", 1)),
                        "claimfsm.duration_ms": round(seconds * 1000, 3),
                        "claimfsm.outcome": code or "ok",
                        "claimfsm.call_id": str(event.get("id", ""))})
        if code:
            span.set_status(Status(StatusCode.ERROR, str(code)))
        span.end(end_time=end)
