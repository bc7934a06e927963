"""The driver's observer: one step wrapped in a span, counted in a tally, logged.

:class:`ObserveSpec` says what to watch as a small frozen value, so it travels pickled to
Ray workers, where :meth:`ObserveSpec.observer` builds the worker's own observer (its
own exporter, its own tally that goes back with the results).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from claimfsm._base.observe import TOOL_HOOK, ToolHook
from claimfsm.engine.step import StepResult
from claimfsm.observe.logs import LOGGER, log_event
from claimfsm.observe.tally import Tally
from claimfsm.state.model import Revision

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanContext

    from claimfsm.observe.traces import Tracing

__all__ = ["ObserveSpec", "Observer"]

_TRACING: dict[str, Tracing] = {}  # this process's OTLP tracing, made once (Ray workers)


@dataclass(frozen=True)
class ObserveSpec:
    """What a worker process watches: ``otel`` sends spans over OTLP (the worker's own
    ``OTEL_*`` variables, or ``endpoint``), linked to the span ``link`` carries; ``tally``
    counts steps for ``/metrics``."""

    otel: bool = False
    endpoint: str | None = None
    link: tuple[tuple[str, str], ...] = ()
    tally: bool = False

    def observer(self) -> Observer | None:
        """A new observer for one engine of this process (``None``: nothing to watch)."""
        if not (self.otel or self.tally or LOGGER.isEnabledFor(logging.INFO)):
            return None
        tracing = process_tracing(self.endpoint) if self.otel else None
        return Observer(tally=Tally() if self.tally else None, tracing=tracing,
                        link=dict(self.link))


def process_tracing(endpoint: str | None = None) -> Tracing:
    """This process's OTLP tracing (one exporter per process and endpoint)."""
    key = endpoint or ""
    found = _TRACING.get(key)
    if found is None:
        from claimfsm.observe.traces import Tracing

        found = _TRACING[key] = Tracing.otlp(endpoint)
    return found


class Observer:
    """Implements :class:`~claimfsm.engine.observer.StepObserver`: spans (``tracing``),
    counts (``tally``) and one ``step`` log event per step. Its own failures are
    swallowed: watching a step never fails it."""

    def __init__(self, *, tally: Tally | None = None, tracing: Tracing | None = None,
                 link: Mapping[str, str] | None = None) -> None:
        self.tally = tally
        self.tracing = tracing
        self._link: SpanContext | None = tracing.linked(link) if tracing and link else None

    def step(self, head: Revision, fire: Callable[[Revision], StepResult]) -> StepResult:
        """Run ``fire(head)`` watched."""
        began = time.perf_counter()
        span = self._start(head)
        hook = self._hook(span)
        token = TOOL_HOOK.set(hook) if hook is not None else None
        try:
            result = fire(head)
        except BaseException as exc:
            if span is not None:
                span.record_exception(exc)
                span.end()
            raise
        finally:
            if token is not None:
                TOOL_HOOK.reset(token)
        try:
            self._done(head, result, span, time.perf_counter() - began)
        except Exception:  # an exporter's fault must not fail the step
            LOGGER.debug("observer failed", exc_info=True)
        return result

    def _start(self, head: Revision) -> Span | None:
        if self.tracing is None:
            return None
        try:
            return self.tracing.start_step(head, self._link)
        except Exception:  # no span, the step still runs
            return None

    def _hook(self, span: Span | None) -> ToolHook | None:
        tally, tracing = self.tally, self.tracing
        if tally is None and (tracing is None or span is None):
            return None

        def hook(event: dict[str, Any], seconds: float) -> None:
            try:
                if tally is not None:
                    tally.tool(str(event.get("tool", "")), event.get("code"), seconds)
                if tracing is not None and span is not None:
                    tracing.tool_span(span, event, seconds)
            except Exception:  # never fail the tool call
                LOGGER.debug("tool observer failed", exc_info=True)

        return hook

    def _done(self, head: Revision, result: StepResult, span: Span | None,
              seconds: float) -> None:
        env = result.envelope
        code = env.e.code if env.e is not None else None
        if self.tally is not None:
            self.tally.step(head.fsm, result.skill or "", env.s, code,
                            committed=result.committed, seconds=seconds)
        if span is not None and self.tracing is not None:
            self.tracing.end_step(span, result)
        rev = result.revision.rev if result.revision is not None else head.rev
        log_event("step", logging.INFO if code is None else logging.WARNING,
                  sid=head.sid, rev=rev, state=head.fsm, to=result.after,
                  skill=result.skill, status=env.s, code=code,
                  committed=result.committed, ms=round(seconds * 1000, 3))
