"""``/api/v1/keys`` for admins (docs/security.md): list the keys (never a key's text:
``{"keys": [...]}``, each as ``claimfsm keys list --json`` lists it), add one (its text is
in that answer only), revoke one, with the CLI's shapes. A change takes effect at once
in this server (the guard's cached key list is dropped) and within
:data:`~claimfsm.ui.auth.KEY_TTL` in others."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from claimfsm.state.keys import new_key, parse_duration, stamp
from claimfsm.ui.api import JSON, read_json
from claimfsm.ui.auth import Gate
from claimfsm.ui.models import KeyRequest
from claimfsm.ui.viewer import key_name

__all__ = ["keys_routes"]


def keys_routes(gate: Gate) -> list[Route]:
    """``GET``/``POST /api/v1/keys`` and ``DELETE /api/v1/keys/{name}``."""
    store = gate.store

    async def listed(request: Request) -> Response:
        now = stamp(gate.now())
        rows = await run_in_threadpool(lambda: list(store.api_keys()))
        return JSON({"keys": [{**k.public(), "status": "revoked" if k.revoked_at else
                               "live" if k.live(now) else "expired"} for k in rows]})

    async def add(request: Request) -> Response:
        body = await read_json(request, KeyRequest)
        lasts = None if body.expires is None else parse_duration(body.expires)
        text, row = new_key(body.name, body.role, now=datetime.now(UTC), expires=lasts,
                            actor=key_name(request.scope))
        await run_in_threadpool(lambda: store.add_key(row))
        gate.forget()
        return JSON({**row.public(), "key": text}, status_code=201,
                    headers={"Location": f"/api/v1/keys/{row.name}",
                             "Cache-Control": "no-store"})

    async def revoke(request: Request) -> Response:
        name = str(request.path_params["name"])
        row = await run_in_threadpool(
            lambda: store.revoke_key(name, at=stamp(datetime.now(UTC)),
                                     actor=key_name(request.scope)))
        gate.forget()
        return JSON({**row.public(), "status": "revoked"})

    return [Route("/api/v1/keys", listed, methods=["GET"]),
            Route("/api/v1/keys", add, methods=["POST"]),
            Route("/api/v1/keys/{name}", revoke, methods=["DELETE"])]
