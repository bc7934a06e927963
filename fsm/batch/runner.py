"""A batch from start to summary: pick where it runs (Ray, or this process), stream each
claim's result line as it finishes, count what happened.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from claimfsm.batch.claims import BatchClaim, Claims
from claimfsm.batch.cluster import check_workers, ray_available, run_on_ray
from claimfsm.batch.worker import ClaimRunner, close_idle, threads_for, verify_chunk
from claimfsm.engine.profile import Profile
from claimfsm.engine.sources import SourceSet
from claimfsm.engine.tick import Ticker
from claimfsm.engine.version import OnVersion
from claimfsm.state.open import Location, locate

if TYPE_CHECKING:
    from claimfsm.observe.observer import ObserveSpec
    from claimfsm.observe.tally import Tally

__all__ = ["BatchSummary", "chunked", "run_batch"]

#: Claims per Ray task at most: a demo claim takes a few ms, a task's round trip about
#: one, so single-claim tasks would spend a fifth of the time on Ray itself.
MAX_CHUNK = 32
STATUSES = ("done", "resumed", "skipped", "failed", "error", "waiting")


class BatchSummary(BaseModel):
    """What a batch did. ``done``: new sessions that reached DONE; ``resumed``: sessions
    a previous run had started; ``skipped``: already DONE; ``failed``: ended elsewhere
    than DONE; ``error``: the store failed for them (nothing lost: run again);
    ``waiting``: stopped to wait for a person (REVIEW, a pause point): not failed, not
    started again by a re-run; ``claimfsm input`` (or a tick) finishes them.
    ``seconds`` runs from the first claim handed out to the last result;
    ``start_up_seconds`` is the time before it (starting or joining Ray, every worker
    opening its engine)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    claims: int
    done: int
    resumed: int
    skipped: int
    failed: int
    error: int
    waiting: int
    seconds: float
    start_up_seconds: float
    claims_per_s: float
    verdicts: dict[str, int]
    runner: Literal["ray", "in-process"]
    workers: int

    @property
    def ok(self) -> bool:
        """Every claim's session is DONE."""
        return self.failed == 0 and self.error == 0


def chunked(claims: Claims, workers: int) -> Iterator[list[BatchClaim]]:
    """Claims in chunks of at most :data:`MAX_CHUNK`, at least eight per worker, cut as
    they are read (the claims are never all held)."""
    size = max(1, min(MAX_CHUNK, math.ceil(len(claims) / (8 * max(1, workers)))))
    return _groups(claims, size)


def _groups(items: Iterable[BatchClaim], size: int) -> Iterator[list[BatchClaim]]:
    it = iter(items)
    while group := list(islice(it, size)):
        yield group


def _failed_chunk(chunk: Sequence[BatchClaim], exc: BaseException) -> list[dict[str, Any]]:
    msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    return [{"id": c.id, "sid": c.sid, "verdict": None, "rev": None, "fsm": None,
             "status": "error", "error": {"code": "TASK_FAILED", "msg": msg[:300]}}
            for c in chunk]


def run_batch(
    claims: Claims,
    db: str | Location,
    *,
    workers: int | None = None,
    address: str | None = None,
    profile: Profile | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_progress: Callable[[int, int, float], None] | None = None,
    on_version: OnVersion = "refuse",
    observe: ObserveSpec | None = None,
    tally: Tally | None = None,
    sources: SourceSet | None = None,
) -> BatchSummary:
    """Verify ``claims`` on ``db`` (parsed here unless it is a location already, then
    handed on as that location): on Ray when ``workers`` is ``None`` (every CPU Ray
    reports) or above 0 (or ``address`` is given) and Ray is installed, else in this
    process (on a PostgreSQL store, several claims at a time:
    :func:`~claimfsm.batch.worker.threads_for`). ``on_result`` gets each result line as
    it finishes; ``on_progress(finished, total, seconds)`` after each. New sessions
    verify with ``profile`` (default: lexical retrieval and judge), the same object in
    this process and a pickled copy on Ray; a resumed one keeps the profile it started
    with. ``on_version="continue"`` continues sessions started on another version of the
    machine (otherwise each is a ``VERSION_MISMATCH`` error line). ``observe`` says what
    every engine watches (:mod:`claimfsm.observe`); the counts it asks for
    (``tally=True``) are merged into ``tally`` as the claims finish. ``sources`` (the
    ``[sources]`` of the command's config file) reach every engine, here and on Ray.

    The store and the evidence index are opened here first (creating and seeding them
    once), so workers only ever open what exists. ``claims`` are walked once and never
    copied: a :class:`~claimfsm.batch.claims.ClaimsFile` streams from its file.

    Raises :class:`~claimfsm.batch.cluster.TooManyWorkers` when ``workers`` is above the
    CPUs Ray reports (a local Ray: this machine's; ``address``: the cluster's).
    """
    use_ray = (workers is None or workers > 0 or address is not None) and ray_available()
    counts: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    finished = 0
    began = time.perf_counter()

    def take(line: dict[str, Any]) -> None:
        nonlocal finished
        counted = line.pop("_tally", None)
        if counted is not None and tally is not None:
            tally.merge(counted)
        finished += 1
        counts[line["status"]] += 1
        if line.get("verdict"):
            verdicts[line["verdict"]] += 1
        if on_result is not None:
            on_result(line)
        if on_progress is not None:
            on_progress(finished, len(claims), time.perf_counter() - began)

    if use_ray:
        check_workers(workers, address)
    where = locate(db)
    threads = threads_for(where)
    # Sessions that fall due while the batch runs (a wait deadline, a retry) advance
    # without waiting for a worker: an engine of the batch's own ticks every second.
    ticking = ClaimRunner(where, profile, on_version, sources=sources)
    ticker = Ticker(ticking.engine.driver).start()
    try:
        local = ClaimRunner(where, profile, on_version, observe, sources)
        try:
            if not use_ray and threads == 1:
                for item in claims:
                    take(local.run(item))
        finally:
            local.close()
        if not use_ray and threads > 1:
            try:
                for group in _groups(claims, 4 * threads):
                    part = [(c.id, c.claim) for c in group]
                    for line in verify_chunk(where, part, profile, threads, on_version,
                                             observe, sources):
                        take(line)
            finally:
                close_idle(where)
        start_up = 0.0
        ran = 0
        if use_ray:
            opened = time.perf_counter()

            def ready(count: int) -> None:
                nonlocal began, start_up, ran
                began = time.perf_counter()
                start_up = began - opened
                ran = count

            for lines in run_on_ray(where, lambda n: chunked(claims, n), workers=workers,
                                    address=address, on_error=_failed_chunk, on_ready=ready,
                                    profile=profile, on_version=on_version,
                                    observe=observe, sources=sources):
                for line in lines:
                    take(line)
    finally:
        ticker.stop()
        ticking.close()
    seconds = time.perf_counter() - began
    return BatchSummary(
        claims=len(claims), **{s: counts[s] for s in STATUSES}, seconds=round(seconds, 3),
        start_up_seconds=round(start_up, 3),
        claims_per_s=round(len(claims) / seconds, 1) if seconds > 0 else 0.0,
        verdicts=dict(sorted(verdicts.items())), runner="ray" if use_ray else "in-process",
        workers=ran if use_ray else 0,
    )
