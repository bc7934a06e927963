"""The role each route needs once the store has API keys (docs/security.md): read looks;
review gives input to a waiting session; write starts, steps, runs, rolls back, forks,
edits, resumes and replays; admin deletes sessions and manages keys. ``public`` routes
(the login form) need no key.

Every route of the app must be listed: :mod:`claimfsm.ui.authz` refuses one that is not
(403), and a test walks every route so a new one without a role fails.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

__all__ = ["PUBLIC", "ROUTE_ROLES", "missing_roles"]

PUBLIC = "public"
_S = "/api/v1/sessions/{sid}"

#: (method, path template) -> the role it needs. HEAD is checked as GET.
ROUTE_ROLES: dict[tuple[str, str], str] = {
    ("GET", "/login"): PUBLIC,
    ("POST", "/login"): PUBLIC,
    ("POST", "/logout"): "read",
    # pages
    ("GET", "/"): "read",
    ("GET", "/sessions/{sid}"): "read",
    ("GET", "/sessions/{sid}/panels"): "read",
    ("GET", "/documents/{doc_id}"): "read",
    ("GET", "/replay"): "read",
    ("POST", "/replay"): "write",  # spends CPU like a run
    ("GET", "/review"): "read",
    ("GET", "/compare"): "read",
    ("GET", "/metrics"): "read",
    # the JSON API
    ("GET", "/api/v1/openapi.json"): "read",
    ("GET", "/api/v1/sessions"): "read",
    ("POST", "/api/v1/sessions"): "write",
    ("GET", _S): "read",
    ("DELETE", _S): "admin",
    ("PATCH", _S): "write",
    ("GET", f"{_S}/head"): "read",
    ("GET", f"{_S}/history"): "read",
    ("GET", f"{_S}/revisions/{{rev}}"): "read",
    ("GET", f"{_S}/diff"): "read",
    ("POST", f"{_S}/step"): "write",
    ("POST", f"{_S}/run"): "write",
    ("POST", f"{_S}/rollback"): "write",
    ("POST", f"{_S}/fork"): "write",
    ("POST", f"{_S}/input"): "review",
    ("POST", f"{_S}/resume"): "write",
    ("GET", f"{_S}/report"): "read",
    ("GET", f"{_S}/record"): "read",
    ("GET", f"{_S}/check"): "read",
    ("GET", "/api/v1/records"): "read",
    ("POST", "/api/v1/replay"): "write",
    ("GET", "/api/v1/documents/{doc_id}"): "read",
    ("GET", "/api/v1/machine"): "read",
    ("GET", "/api/v1/compare"): "read",
    ("GET", "/api/v1/keys"): "admin",
    ("POST", "/api/v1/keys"): "admin",
    ("DELETE", "/api/v1/keys/{name}"): "admin",
}


def missing_roles(routes: list[BaseRoute]) -> list[str]:
    """``METHOD path`` of every route method :data:`ROUTE_ROLES` does not list."""
    out = []
    for route in routes:
        if not isinstance(route, Route):
            out.append(f"* {getattr(route, 'path', route)!r}")
            continue
        for method in sorted((route.methods or set()) - {"HEAD"}):
            if (method, route.path) not in ROUTE_ROLES:
                out.append(f"{method} {route.path}")
    return out
