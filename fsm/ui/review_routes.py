"""The review queue's page, ``GET /review`` (:mod:`claimfsm.ui.review`): the query from
the page's filters, one keyset page from the store's queue read path
(:meth:`~claimfsm.state.store.StateStore.waiting`), rendered on the server."""

from __future__ import annotations

from datetime import datetime
from typing import get_args

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from claimfsm.engine.errors import BadInput
from claimfsm.engine.step import iso
from claimfsm.state.queue import WaitingPage, WaitingQuery
from claimfsm.ui.queries import VerdictFilter, bad_input, whole
from claimfsm.ui.review import age_delta, queue_page
from claimfsm.ui.service import Service

__all__ = ["queue_query", "review_routes"]


def queue_query(request: Request, now: datetime) -> tuple[WaitingQuery, str]:
    """The queue's query from ``fsm``, ``verdict``, ``age``, ``limit`` and ``after``
    (``age``, e.g. ``1h``, keeps the sessions that have waited at least that long at
    ``now``), and the age as given."""
    p = request.query_params
    age = p.get("age") or ""
    until = iso(now - age_delta(age)) if age else None
    limit = p.get("limit") or "50"
    try:
        count = int(whole(limit))
    except ValueError:
        raise BadInput(f"limit: {limit[:40]!r} is not a whole number", field="limit") from None
    verdict = p.get("verdict") or None
    if verdict is not None and verdict not in get_args(VerdictFilter):
        raise BadInput(f"verdict: {verdict[:40]!r} is not one of "
                       f"{', '.join(get_args(VerdictFilter))}", field="verdict")
    try:
        query = WaitingQuery(limit=count, after=p.get("after") or None,
                             fsm=p.get("fsm") or None, verdict=verdict,
                             until=until)
    except ValidationError as exc:
        raise bad_input(exc) from None
    return query, age


def review_routes(service: Service) -> list[Route]:
    """``GET /review``: the review queue page."""
    engine = service.engine

    async def queue(request: Request) -> Response:
        now = engine.driver.clock.now()
        query, age = queue_query(request, now)
        result: WaitingPage = await run_in_threadpool(
            lambda: service.locked(lambda: engine.store.waiting(query)))
        return HTMLResponse(queue_page(result, query, age, engine.driver.definition, now))

    return [Route("/review", queue, methods=["GET"])]
