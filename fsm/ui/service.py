"""What the UI and its HTTP API do to sessions: the CLI's operations over one engine.

Every sync call takes the engine's lock: the web server runs those on worker threads and
an engine (its store connection, its evidence index) is used by one of them at a time.
The session operations the web app awaits (``astart``, ``astep``, ``arun``, ...) go
through the async engine (:class:`~claimfsm.engine.async_runtime.AsyncEngine`) over the
same engine instead: its compare-and-set commits need no lock, and its skills run on
worker threads while the event loop serves other requests.
Contract errors propagate as the engine raises them (:class:`~claimfsm.engine.errors.ClaimFsmError`,
:class:`~claimfsm.state.errors.StoreError`); the web layer maps their codes to HTTP statuses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from claimfsm.engine.async_runtime import AsyncEngine
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import StepResult
from claimfsm.engine.errors import BadInput
from claimfsm.engine.profile import resolve_profile
from claimfsm.engine.runtime import FIXTURES, Engine
from claimfsm.engine.views import revision_json
from claimfsm.replay.write import engine_record
from claimfsm.state.aio import async_store_of
from claimfsm.state.catalog import HistoryPage, SummaryPage, SummaryQuery
from claimfsm.state.errors import RevConflict
from claimfsm.state.model import Revision
from claimfsm.state.open import Location
from claimfsm.state.store import StateStore
from claimfsm.state.tombstone import Tombstone
from claimfsm.ui.diff import Change, diff_values

__all__ = ["RECORDS", "Service"]

T = TypeVar("T")

#: Record files offered for replay when no other folder is given.
RECORDS = FIXTURES / "sessions"


@dataclass
class Service:
    """Session operations over ``engine``; ``records`` is the folder of record files the
    replay page offers."""

    engine: Engine
    records: Path = RECORDS
    lock: threading.RLock = field(default_factory=threading.RLock)
    _async: AsyncEngine | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, db: str | Location | None, *, records: Path | None = None,
             config: EngineConfig | None = None) -> Service:
        """Open ``db`` (a SQLite file, a ``postgresql://`` URL or its location, ``None``
        for memory) as ``Engine.open(db, config=config)`` does."""
        return cls(Engine.open(db, config=config), records or RECORDS)

    def close(self) -> None:
        """Close the engine."""
        with self.lock:
            self.engine.close()

    def _locked(self, fn: Callable[[], T]) -> T:
        with self.lock:
            return fn()

    def delete(self, sid: str, actor: str) -> Tombstone:
        """Delete the session (its tombstone names ``actor``)."""
        from datetime import UTC, datetime

        at = datetime.now(UTC).isoformat(timespec="microseconds")
        return self._locked(lambda: self.engine.store.delete(sid, actor=actor, at=at))

    def locked(self, fn: Callable[[], T]) -> T:
        """``fn()`` under the service's lock (one writer of the engine at a time)."""
        return self._locked(fn)

    # -- reading --------------------------------------------------------------------

    def sessions(self, query: SummaryQuery) -> SummaryPage:
        """A page of session summaries."""
        return self._locked(lambda: self.engine.store.summaries(query))

    def versioned(self, query: SummaryQuery, version: str | None
                  ) -> tuple[SummaryPage, dict[str, str]]:
        """A page of session summaries (only those on ``version`` when given) and each
        listed session's machine version."""
        from claimfsm.engine.listing import versioned_summaries, versions_of

        if version is None:
            page = self.sessions(query)
            sids = [item.sid for item in page.items]
            return page, self._locked(lambda: versions_of(self.engine.store, sids))
        return self._locked(lambda: versioned_summaries(self.engine.store, query, version))

    def head(self, sid: str) -> Revision:
        """The session's newest revision."""
        return self._locked(lambda: self.engine.store.head(sid))

    def revision(self, sid: str, rev: int) -> Revision:
        """One revision."""
        return self._locked(lambda: self._live(sid).get(sid, rev))

    def _live(self, sid: str) -> StateStore:
        # A revision read by number may come from the store's cache, which outlives a
        # deletion by another process: the head is always read from the store.
        self.engine.store.head(sid)
        return self.engine.store

    def history(self, sid: str) -> list[Revision]:
        """Every revision, oldest first."""
        return self._locked(lambda: list(self.engine.store.history(sid)))

    def history_page(self, sid: str, start: int, limit: int) -> HistoryPage:
        """Revisions ``start .. start + limit - 1`` (read by key: the page's cost, not the
        session's)."""
        return self._locked(lambda: self.engine.store.history_page(sid, start, limit))

    def diff(self, sid: str, a: int, b: int) -> list[Change]:
        """What changed from revision ``a`` to revision ``b`` (state, envelope, events)."""
        def run() -> list[Change]:
            store = self._live(sid)
            ra, rb = store.get(sid, a), store.get(sid, b)
            return diff_values(revision_json(ra), revision_json(rb))

        return self._locked(run)

    def record(self, sid: str) -> bytes:
        """The session's record, as ``claimfsm export SID`` writes it."""
        return self._locked(lambda: engine_record(self.engine, sid).to_bytes())

    def check(self, sid: str) -> dict[str, Any]:
        """The session's hash chain verified (what ``claimfsm fsck`` checks, for one)."""
        found = self._locked(lambda: self.engine.store.verify_chain(sid))
        return {**found.model_dump(mode="json"), "ok": found.ok}

    def document(self, doc_id: str) -> dict[str, Any] | None:
        """An indexed document (what an evidence sentence links to)."""
        doc = self._locked(lambda: self.engine.index.get_document(doc_id))
        return None if doc is None else doc.model_dump()

    # -- driving --------------------------------------------------------------------

    def start(self, claim: str, options: Mapping[str, Any] | None = None, *,
              actor: str | None = None) -> Revision:
        """A new session for ``claim``; ``options`` (retrieval, judge, stance_model) over
        the config file (``claimfsm.toml``) over the defaults, as the CLI's ``start``;
        ``actor`` (the API key's name) is recorded in its ``SessionStarted`` event."""
        opts = {k: v for k, v in (options or {}).items() if v is not None}
        if "stance_model" in opts:
            opts["stance_model"] = Path(opts["stance_model"])
        return self._locked(lambda: self.engine.start(claim, profile=resolve_profile(opts),
                                                      actor=actor))

    def _expect(self, sid: str, expected_rev: int | None) -> None:
        # The page acts on the revision it shows; if the CLI (or another tab) moved the
        # session meanwhile, the action is refused rather than applied to another head.
        if expected_rev is None:
            return
        head = self.engine.store.head(sid)
        if head.rev != expected_rev:
            raise RevConflict(f"head is {head.rev}, not {expected_rev}: the session moved; "
                              "reload it", sid=sid, head=head.rev, expected=expected_rev)

    def step(self, sid: str, expected_rev: int | None = None, *,
             actor: str | None = None) -> StepResult:
        """Fire one transition (``actor``, the API key's name, recorded in the revision
        it commits)."""
        def run() -> StepResult:
            self._expect(sid, expected_rev)
            return self.engine.driver.step(sid, actor=actor)

        return self._locked(run)

    def run(self, sid: str, expected_rev: int | None = None, max_steps: int = 1000, *,
            actor: str | None = None) -> Revision:
        """Step until a final state or a step that cannot commit (each step records
        ``actor``)."""
        def go() -> Revision:
            self._expect(sid, expected_rev)
            return self.engine.driver.run(sid, max_steps=max_steps, actor=actor)

        return self._locked(go)

    def rollback(self, sid: str, to: int, *, reopen: bool = False,
                 expected_rev: int | None = None, actor: str | None = None) -> Revision:
        """Rewind to revision ``to`` (a new revision; history kept; ``actor`` recorded in
        its ``Rewind`` event)."""
        def run() -> Revision:
            self._expect(sid, expected_rev)
            return self.engine.driver.rollback(sid, to, reopen=reopen, actor=actor)

        return self._locked(run)

    def fork(self, sid: str, at: int, options: Mapping[str, Any] | None = None, *,
             actor: str | None = None) -> Revision:
        """A new session whose history is ``sid``'s up to revision ``at``, then its own
        revision naming its parent (and ``actor``); ``options`` (retrieval, judge,
        stance_model; ``None``: unchanged) make it a what-if fork
        (:func:`~claimfsm.engine.whatif.what_if_fork`)."""
        from claimfsm.engine.whatif import what_if_fork

        return self._locked(lambda: what_if_fork(self.engine, sid, at, options, actor=actor))

    def lineage(self, head: Revision) -> dict[str, Any]:
        """``{"forked_from", "forks"}`` of the session at ``head``
        (:func:`~claimfsm.engine.lineage.lineage_json`)."""
        from claimfsm.engine.lineage import lineage_json

        return self._locked(lambda: lineage_json(self.engine.store, head))

    def parents(self, sids: list[str]) -> dict[str, dict[str, Any] | None]:
        """The parent ``{sid, rev, at}`` of each of ``sids`` that is a fork."""
        from claimfsm.engine.lineage import parents_of

        return self._locked(lambda: parents_of(self.engine.store, sids))

    # -- replay ---------------------------------------------------------------------

    def record_names(self) -> list[str]:
        """Record files offered for replay (relative to :attr:`records`)."""
        if not self.records.is_dir():
            return []
        return sorted(str(p.relative_to(self.records)) for p in self.records.rglob("*.jsonl"))

    def record_bytes(self, name: str) -> tuple[bytes, str]:
        """The bytes of an offered record (never a path outside the folder)."""
        if name not in self.record_names():
            raise BadInput(f"name: no record {name!r} is offered (see /api/v1/records)",
                           field="name")
        return (self.records / name).read_bytes(), name

    # -- the async path: what the web app awaits -------------------------------------

    @property
    def aengine(self) -> AsyncEngine:
        """The async engine over :attr:`engine` (made on first use)."""
        if self._async is None:
            self._async = AsyncEngine.over(self.engine, async_store_of(self.engine.store))
        return self._async

    async def _aexpect(self, sid: str, expected_rev: int | None) -> None:
        if expected_rev is None:
            return
        head = await self.aengine.ahead(sid)
        if head.rev != expected_rev:
            raise RevConflict(f"head is {head.rev}, not {expected_rev}: the session moved; "
                              "reload it", sid=sid, head=head.rev, expected=expected_rev)

    async def ahead(self, sid: str) -> Revision:
        """:meth:`head`, awaited."""
        return await self.aengine.ahead(sid)

    async def arevision(self, sid: str, rev: int) -> Revision:
        """:meth:`revision`, awaited (the head read first: a deleted session is gone)."""
        await self.aengine.ahead(sid)
        return await self.aengine.store.get(sid, rev)

    async def astart(self, claim: str, options: Mapping[str, Any] | None = None, *,
                     actor: str | None = None) -> Revision:
        """:meth:`start`, awaited."""
        opts = {k: v for k, v in (options or {}).items() if v is not None}
        if "stance_model" in opts:
            opts["stance_model"] = Path(opts["stance_model"])
        engine = self.aengine
        return await engine.astart(claim, profile=await engine.call(resolve_profile, opts),
                                   actor=actor)

    async def astep(self, sid: str, expected_rev: int | None = None, *,
                    actor: str | None = None) -> StepResult:
        """:meth:`step`, awaited."""
        await self._aexpect(sid, expected_rev)
        return await self.aengine.astep(sid, actor=actor)

    async def arun(self, sid: str, expected_rev: int | None = None,
                   max_steps: int = 1000, *, actor: str | None = None) -> Revision:
        """:meth:`run`, awaited."""
        await self._aexpect(sid, expected_rev)
        return await self.aengine.arun(sid, max_steps=max_steps, actor=actor)

    async def arollback(self, sid: str, to: int, *, reopen: bool = False,
                        expected_rev: int | None = None, actor: str | None = None) -> Revision:
        """:meth:`rollback`, awaited."""
        await self._aexpect(sid, expected_rev)
        return await self.aengine.arollback(sid, to, reopen=reopen, actor=actor)

    async def afork(self, sid: str, at: int, options: Mapping[str, Any] | None = None, *,
                    actor: str | None = None) -> Revision:
        """:meth:`fork`, awaited; a what-if fork (``options`` given) checks and loads its
        profile as :meth:`fork` does, on a worker thread."""
        if any(v is not None for v in (options or {}).values()):
            return await self.aengine.call(lambda: self.fork(sid, at, options, actor=actor))
        return await self.aengine.afork(sid, at, actor=actor)
