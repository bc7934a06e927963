"""Which sessions were forked from which: what the stores index about lineage.

A fork's own first revision (``at + 1``, written by the engine's lineage module) carries a
``Forked`` event naming its parent ``{"sid", "rev"}`` and keeps the link under
``state.runtime["forked_from"]``. A store reads the event off the revision it commits
(:func:`fork_mark`: one look at the revision's few events, nothing for an ordinary step)
and records the fork under its parent in the same transaction, so that the forks of a
session are one indexed read (:meth:`~claimfsm.state.store.StateStore.forks`). A store
without that index (read-only from before it, or another backend) reads every head
(:func:`scan_forks`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm._base.errors import BadInput

if TYPE_CHECKING:
    from claimfsm.state.model import Revision

__all__ = ["FORKED", "LINEAGE_KEY", "MAX_FORKS", "check_limit", "fork_mark", "link_of",
           "scan_forks"]

FORKED = "Forked"
"""The event type of a fork's own first revision."""

LINEAGE_KEY = "forked_from"
"""The key of ``state.runtime`` holding ``{"sid", "rev", "at"}`` of a fork's parent."""

#: The most forks one call returns.
MAX_FORKS = 1000
#: Heads read at once while scanning.
_CHUNK = 500


def check_limit(limit: int) -> int:
    """``limit`` if it is 1 to :data:`MAX_FORKS`, else :class:`BadInput` naming it."""
    if not 1 <= limit <= MAX_FORKS:
        raise BadInput(f"limit: {limit}, must be 1 to {MAX_FORKS}", field="limit")
    return limit


def fork_mark(revision: Revision) -> tuple[str, int, str] | None:
    """``(parent sid, parent revision, when)`` if ``revision`` is a fork's own revision
    (it carries a ``Forked`` event), else ``None``."""
    for event in revision.events:
        if event.get("type") == FORKED:
            origin = event.get("from")
            if isinstance(origin, Mapping) and isinstance(origin.get("rev"), int):
                return str(origin.get("sid", "")), int(origin["rev"]), revision.ts
    return None


def link_of(head: Revision) -> dict[str, Any] | None:
    """``{"sid", "rev", "at"}`` of the parent the session at ``head`` was forked from."""
    link = head.state.runtime.get(LINEAGE_KEY) if head.state.runtime else None
    return dict(link) if isinstance(link, Mapping) else None


def scan_forks(sids: Sequence[str], heads: Callable[[Sequence[str]], dict[str, Revision]],
               sid: str, limit: int) -> list[dict[str, Any]]:
    """The forks of ``sid`` among ``sids`` (creation order) found by reading every head:
    ``{"sid", "rev", "at"}`` each, at most ``limit``."""
    out: list[dict[str, Any]] = []
    names = [name for name in sids if name != sid]
    for start in range(0, len(names), _CHUNK):
        chunk = names[start: start + _CHUNK]
        found = heads(chunk)
        for name in chunk:
            head = found.get(name)
            link = None if head is None else link_of(head)
            if link is not None and link.get("sid") == sid:
                out.append({"sid": name, "rev": link.get("rev"), "at": link.get("at")})
                if len(out) >= limit:
                    return out
    return out
