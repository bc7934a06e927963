"""``/metrics`` on ``claimfsm ui``, and the observer on the service's engine: every step
the UI or its API runs is counted (and traced, with ``--otel``; logged, with
``--log-format``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from claimfsm.observe.metrics import CONTENT_TYPE, StoreGauges, registry_for, render
from claimfsm.observe.observer import Observer
from claimfsm.observe.tally import Tally
from claimfsm.ui.service import Service

if TYPE_CHECKING:
    from claimfsm.observe.traces import Tracing

__all__ = ["observe_app"]


def observe_app(app: Starlette, service: Service, *, tracing: Tracing | None = None) -> Tally:
    """Watch ``service``'s engine and serve its metrics at ``GET /metrics`` (Prometheus
    text); returns the tally the counters read."""
    tally = Tally()
    driver = service.engine.driver
    driver.observer = Observer(tally=tally, tracing=tracing)
    gauges = StoreGauges(service.sessions, service.head, driver.definition.finals)
    registry = registry_for(tally, gauges)

    async def metrics(request: Request) -> Response:
        # Reading the store's sessions may block: off the event loop.
        body = await run_in_threadpool(render, registry)
        return Response(body, media_type=CONTENT_TYPE)

    app.router.routes.append(Route("/metrics", metrics, methods=["GET"]))
    return tally
