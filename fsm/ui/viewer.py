"""Who is looking at a page (set by :mod:`claimfsm.ui.authz` for the request being
served): the page shell shows the name and a log-out button, hands the page's scripts
the CSRF token, and lets them disable what the role may not do. ``None`` when the store
has no keys (and in reports)."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, NamedTuple

__all__ = ["VIEWER", "Viewer", "actor_of", "key_name"]


class Viewer(NamedTuple):
    """The key's name and role, and the login's CSRF token (``None``: a bearer key)."""

    name: str
    role: str
    csrf: str | None


VIEWER: ContextVar[Viewer | None] = ContextVar("claimfsm_viewer", default=None)


def key_name(scope: Mapping[str, Any]) -> str | None:
    """The name of the request's key (set by the guard), ``None`` on a store without keys."""
    actor = (scope.get("state") or {}).get("actor")
    return None if actor is None else str(actor)


def actor_of(scope: Mapping[str, Any], fallback: str) -> str:
    """The request's actor: its key's name once the store has keys (set by the guard,
    whatever the body says), else ``fallback`` (the body's ``actor``, or ``api``)."""
    return key_name(scope) or fallback
