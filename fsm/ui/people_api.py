"""The HTTP API for people in the loop (docs/review.md): input to a waiting session,
resuming a paused one, and editing a holding one. Each is one committed revision with
compare-and-set on the head (``expected_rev``: a stale page gets ``REV_CONFLICT``, 409);
input and resume then run the session on to its next stop and answer as ``run`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from claimfsm.engine.views import revision_json, verdict_json
from claimfsm.ui.api import JSON, read_json
from claimfsm.ui.models import EditRequest, InputRequest, ResumeRequest
from claimfsm.ui.service import Service
from claimfsm.ui.viewer import actor_of, key_name

__all__ = ["people_routes"]

T = TypeVar("T")


def people_routes(service: Service) -> list[Route]:
    """``POST .../input``, ``POST .../resume``, ``PATCH /api/v1/sessions/{sid}``."""
    driver = service.engine.driver

    async def locked(fn: Callable[[], T]) -> T:
        return await run_in_threadpool(lambda: service.locked(fn))

    async def give_input(request: Request) -> Response:
        sid, body = str(request.path_params["sid"]), await read_json(request, InputRequest)

        actor = actor_of(request.scope, body.actor)
        rev = await locked(lambda: driver.input(sid, body.input,
                                                expected_rev=body.expected_rev,
                                                actor=actor))
        # The run after it is the key's doing too (no key: nobody is recorded).
        done = await service.arun(sid, actor=key_name(request.scope))
        return JSON({"input_rev": rev.rev, **verdict_json(done)})

    async def resume(request: Request) -> Response:
        sid, body = str(request.path_params["sid"]), await read_json(request, ResumeRequest)

        actor = actor_of(request.scope, body.actor)
        rev = await locked(lambda: driver.resume(sid, expected_rev=body.expected_rev,
                                                 actor=actor))
        done = await service.arun(sid, actor=key_name(request.scope))
        return JSON({"resume_rev": rev.rev, **verdict_json(done)})

    async def edit(request: Request) -> Response:
        sid, body = str(request.path_params["sid"]), await read_json(request, EditRequest)
        rev = await locked(lambda: driver.edit(sid, list(body.set.items()),
                                               expected_rev=body.expected_rev,
                                               actor=actor_of(request.scope, body.actor)))
        return JSON(revision_json(rev, full=False))

    v1 = "/api/v1/sessions/{sid}"
    return [
        Route(f"{v1}/input", give_input, methods=["POST"]),
        Route(f"{v1}/resume", resume, methods=["POST"]),
        Route(v1, edit, methods=["PATCH"]),
    ]
