"""Session listings with each session's machine version, and the ``--version`` filter.

The stores' catalogs know a session's state and verdict, not its version (that is in its
revisions: :func:`claimfsm.engine.version.session_version`), so the filter reads the
version of each listed session and pages on through the catalog until a page is full.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from claimfsm.engine.version import session_version

if TYPE_CHECKING:
    from claimfsm.state.catalog import SessionSummary, SummaryPage, SummaryQuery
    from claimfsm.state.store import StateStore

__all__ = ["versioned_summaries", "versions_of"]


def versions_of(store: StateStore, sids: Iterable[str]) -> dict[str, str]:
    """The machine version of each session of ``sids``."""
    return {sid: session_version(store, store.head(sid)) for sid in sids}


def versioned_summaries(store: StateStore, query: SummaryQuery,
                        version: str | None = None) -> tuple[SummaryPage, dict[str, str]]:
    """A page of ``query`` (only sessions on ``version`` when given) and each listed
    session's version by sid."""
    from claimfsm.state.catalog import SummaryPage

    def version_of(sid: str) -> str:
        return session_version(store, store.head(sid))

    if version is None:
        page = store.summaries(query)
        return page, {item.sid: version_of(item.sid) for item in page.items}
    kept: list[SessionSummary] = []
    cursor = query.before
    while True:
        # Wide pages of the catalog: most of a store may be on other versions.
        page = store.summaries(query.model_copy(update={"before": cursor, "limit": 500}))
        for item in page.items:
            if version_of(item.sid) == version:
                kept.append(item)
                if len(kept) == query.limit:
                    return SummaryPage(items=kept, next=item.seq), dict.fromkeys(
                        (i.sid for i in kept), version)
        if page.next is None:
            return SummaryPage(items=kept, next=None), dict.fromkeys((i.sid for i in kept),
                                                                      version)
        cursor = page.next
