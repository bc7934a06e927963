"""One claim to its end, safe to run again: what every batch worker (a Ray task or the
command's own process) runs.

Exactly-once revisions under at-least-once execution: a claim's session id is fixed by
the input line, so an attempt first reads the head. A DONE session is skipped, one
mid-way resumes from its head (never from revision 0), and a compare-and-set miss (a
retried task racing the attempt it replaces) reloads the head and carries on instead of
failing. Every commit is a compare-and-set, so no revision lands twice.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from claimfsm.batch.claims import BatchClaim
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import StepResult
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.engine.sources import SourceSet
from claimfsm.engine.version import OnVersion, VersionMismatch
from claimfsm.state.errors import RevConflict, StoreError, UnknownSession
from claimfsm.state.holds import hold_of
from claimfsm.state.open import Location, locate

if TYPE_CHECKING:
    from claimfsm.observe.observer import ObserveSpec

__all__ = [
    "SERVER_THREADS", "ClaimRunner", "close_idle", "threads_for", "verify_chunk", "warm",
]

#: Claims a worker process runs at once on a PostgreSQL store (see :func:`threads_for`).
SERVER_THREADS = 4

# Each reload follows a commit another attempt made, so this bounds nothing in practice;
# it only stops a livelock from spinning forever.
_RELOADS = 100


class ClaimRunner:
    """An engine opened once (per worker process) and the last step's outcome; new
    sessions verify with ``profile`` (default: lexical retrieval and judge); ``observe``
    says what to watch (traces, counts for ``/metrics``: :mod:`claimfsm.observe`);
    ``sources`` are the HTTP backends of ``[sources]`` (docs/retrieval.md)."""

    def __init__(self, db: str | Location | None, profile: Profile | None = None,
                 on_version: OnVersion = "refuse",
                 observe: ObserveSpec | None = None,
                 sources: SourceSet | None = None) -> None:
        self.last_code: str | None = None
        config = EngineConfig(on_step=self._seen, profile=profile or Profile.default(),
                              on_version=on_version,
                              sources=sources.configs() if sources is not None else None)
        self.engine = Engine.open(db, config=config)
        self.observer = observe.observer() if observe is not None else None
        self.engine.driver.observer = self.observer

    def _seen(self, result: StepResult) -> None:
        error = result.envelope.e
        self.last_code = None if result.committed or error is None else error.code

    def close(self) -> None:
        """Close the engine."""
        self.engine.close()

    def run(self, item: BatchClaim) -> dict[str, Any]:
        """Drive ``item``'s session to a final state; returns its result line."""
        store, driver = self.engine.store, self.engine.driver
        finals = driver.definition.finals
        sid = item.sid
        try:
            head = store.head(sid)
        except UnknownSession:
            try:
                head = driver.start(item.claim, sid=sid, config=self.engine.profile.config())
            except RevConflict:  # another attempt of this claim created it first
                head = store.head(sid)
        first = head.rev
        if head.fsm in finals:
            status = "skipped"
        else:
            for _ in range(_RELOADS):
                self.last_code = None
                try:
                    head = driver.run(sid)
                except VersionMismatch as exc:  # this claim's line says so; the rest run
                    return {"id": item.id, "sid": sid, "verdict": None, "rev": head.rev,
                            "fsm": head.fsm, "status": "error", "from_rev": first,
                            "error": {"code": exc.code, "msg": exc.msg}}
                if head.fsm in finals or self.last_code != "REV_CONFLICT":
                    break
            status = "resumed" if first > 0 else "done"
            if hold_of(head.state) is not None:  # waits for a person: not a failure
                status = "waiting"
            elif head.fsm != "DONE":
                status = "failed"
        verdict = head.state.verdict["label"] if head.state.verdict else None
        out: dict[str, Any] = {"id": item.id, "sid": sid, "verdict": verdict, "rev": head.rev,
                               "fsm": head.fsm, "status": status, "from_rev": first}
        if head.state.error:
            out["error"] = head.state.error
        elif status == "failed" and self.last_code:
            out["error"] = {"code": self.last_code, "msg": "the last step did not commit"}
        if self.observer is not None and self.observer.tally is not None:
            out["_tally"] = self.observer.tally.drain()  # run_batch takes it off the line
        return out


#: Idle runners per ``(location, profile, on_version)`` (and ``observe`` when set): one
#: per thread that has run a claim in this process. All are frozen values, so they key the
#: table as they are.
_IDLE: dict[tuple[Any, ...], list[ClaimRunner]] = {}
_LOCK = threading.Lock()


def _key(db: Location, profile: Profile | None,
         on_version: OnVersion = "refuse",
         observe: ObserveSpec | None = None,
         sources: SourceSet | None = None) -> tuple[Any, ...]:
    key: tuple[Any, ...] = (db, profile or Profile.default(), on_version)
    key = key if observe is None else (*key, observe)
    return key if sources is None else (*key, sources)


def _take(db: Location, profile: Profile | None, on_version: OnVersion = "refuse",
          observe: ObserveSpec | None = None,
          sources: SourceSet | None = None) -> ClaimRunner:
    with _LOCK:
        idle = _IDLE.setdefault(_key(db, profile, on_version, observe, sources), [])
        if idle:
            return idle.pop()
    return ClaimRunner(db, profile, on_version, observe, sources)


def _give(db: Location, profile: Profile | None, runner: ClaimRunner,
          observe: ObserveSpec | None = None, sources: SourceSet | None = None) -> None:
    on_version = runner.engine.driver.versioning.on_version
    with _LOCK:
        _IDLE.setdefault(_key(db, profile, on_version, observe, sources), []).append(runner)


def close_idle(db: str | Location) -> None:
    """Close this process's kept engines for ``db`` (every profile)."""
    where = locate(db)
    with _LOCK:
        keys = [key for key in _IDLE if key[0] == where]
        runners = [runner for key in keys for runner in _IDLE.pop(key)]
    for runner in runners:
        runner.close()


def threads_for(db: str | Location) -> int:
    """Claims one process runs at once on ``db``: :data:`SERVER_THREADS` on a server
    store, where a step mostly waits for the server's WAL flush and other claims can use
    the CPU meanwhile; one on a SQLite file, which takes one writer at a time anyway."""
    return SERVER_THREADS if locate(db).url else 1


def warm(db: str | Location, profile: Profile | None, threads: int,
         on_version: OnVersion = "refuse", observe: ObserveSpec | None = None,
         sources: SourceSet | None = None) -> int:
    """Open ``threads`` engines for ``db`` in this process ahead of the first chunk;
    returns the pid."""
    import os

    where = locate(db)
    runners = [_take(where, profile, on_version, observe, sources) for _ in range(threads)]
    for runner in runners:
        _give(where, profile, runner, observe, sources)
    return os.getpid()


def _one(db: Location, profile: Profile | None, item: BatchClaim,
         on_version: OnVersion = "refuse",
         observe: ObserveSpec | None = None,
         sources: SourceSet | None = None) -> dict[str, Any]:
    runner = _take(db, profile, on_version, observe, sources)
    try:
        line = runner.run(item)
    except StoreError as exc:
        runner.close()  # its connection may be the broken part: the next claim reopens
        return {"id": item.id, "sid": item.sid, "verdict": None, "rev": None, "fsm": None,
                "status": "error", "error": {"code": exc.code, "msg": exc.msg}}
    except ClaimFsmError as exc:  # a claim the engine refuses (read_claims checks first)
        _give(db, profile, runner, observe, sources)
        return {"id": item.id, "sid": item.sid, "verdict": None, "rev": None, "fsm": None,
                "status": "error", "error": {"code": exc.code, "msg": exc.msg}}
    _give(db, profile, runner, observe, sources)
    return line


def verify_chunk(
    db: str | Location, items: Sequence[tuple[str | int, str]],
    profile: Profile | None = None, threads: int = 1, on_version: OnVersion = "refuse",
    observe: ObserveSpec | None = None, sources: SourceSet | None = None,
) -> list[dict[str, Any]]:
    """Run each ``(id, claim)`` of ``items`` on ``db`` (the body of a Ray task: the
    :class:`~claimfsm.state.open.Location` and the :class:`~claimfsm.engine.profile.Profile`
    travel to it pickled, as they are) with the verification ``profile``, ``threads``
    claims at a time, each thread with an engine (and connection) of its own;
    ``observe`` (traces, counts) as :class:`~claimfsm.observe.observer.ObserveSpec` says;
    ``sources`` the HTTP backends, resolved by the command that started the batch.

    Engines are opened once per process and kept, so a worker pays for its connections
    and evidence index once, not per task. A store error for one claim becomes that
    claim's ``status: "error"`` line; the others still run. Lines come in input order.
    """
    where = locate(db)
    claims = [BatchClaim(id=claim_id, claim=text) for claim_id, text in items]
    try:
        if threads <= 1 or len(claims) <= 1:
            return [_one(where, profile, item, on_version, observe, sources)
                    for item in claims]
        with ThreadPoolExecutor(min(threads, len(claims))) as pool:
            return list(pool.map(
                lambda item: _one(where, profile, item, on_version, observe, sources), claims))
    finally:
        if observe is not None and observe.otel:  # a Ray worker may be killed, unflushed
            from claimfsm.observe.observer import process_tracing

            process_tracing(observe.endpoint).flush()
