"""The Ray side of a batch: join or start a cluster, keep a window of chunk tasks in
flight, hand back each chunk's results as it finishes.

Ray retries a task whose worker process died (``max_retries``); the retried task reads
each claim's head and resumes it (:mod:`claimfsm.batch.worker`), which is what makes the
retry safe.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.batch.claims import BatchClaim
from claimfsm.engine.errors import ClaimFsmError, ErrorCode

if TYPE_CHECKING:
    from claimfsm.engine.profile import Profile
    from claimfsm.state.open import Location

__all__ = ["RAY_RETRIES", "RayUnavailable", "ray_available", "run_on_ray"]

#: Worker deaths one chunk survives before its claims are reported as errors.
RAY_RETRIES = 20


def ray_available() -> bool:
    """Whether the ``ray`` extra is installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


class RayUnavailable(ClaimFsmError):
    """Ray could not be started, or the cluster at ``--ray`` could not be joined."""

    code = ErrorCode.RAY_UNAVAILABLE


def _reachable(address: str) -> None:
    """Fail fast on a ``HOST:PORT`` nobody listens on (Ray itself retries for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", "ray://...": left to Ray
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise RayUnavailable(f"--ray {address}: cannot connect ({exc.strerror or exc})",
                             field="ray") from exc


def _init(address: str | None, workers: int) -> bool:
    """Connect (or start a local Ray with ``workers`` CPUs); True if this call did it."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if address:
        _reachable(address)
    if ray.is_initialized():  # a caller's own Ray (a library user, the tests) is used as is
        return False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                               "logging_level": logging.WARNING}
    try:
        if address:
            ray.init(address=address, **options)
        else:
            ray.init(num_cpus=workers, _node_ip_address="127.0.0.1", **options)
    except RayUnavailable:
        raise
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
        where = f"--ray {address}" if address else "a local Ray"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayUnavailable(f"{where}: {first}", field="ray") from exc
    return True


def run_on_ray(
    db: Location,
    chunks: Sequence[Sequence[BatchClaim]],
    *,
    workers: int,
    address: str | None,
    profile: Profile | None = None,
    on_error: Callable[[Sequence[BatchClaim], BaseException], list[dict[str, Any]]] = (
        lambda chunk, exc: []),
    on_ready: Callable[[], None] | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """Yield each chunk's result lines as the chunk finishes (completion order).

    ``db`` and ``profile`` go to every task as they are (frozen values; Ray pickles
    them). First every worker opens its engine (``on_ready`` is called once they have), so
    the clock of a batch can leave out Ray's start-up and the workers' imports.

    At most ``2 * workers`` chunks are in flight, so a killed driver leaves little
    queued work behind. A chunk that fails for good (retries used up, or an error its
    worker could not turn into result lines) is passed to ``on_error``.
    """
    import ray

    from claimfsm.batch.worker import threads_for, verify_chunk, warm

    started = _init(address, workers)
    task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(verify_chunk)
    threads = threads_for(db)
    try:
        ray.get([ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(warm).remote(db, profile, threads)
                 for _ in range(max(1, workers))])
        if on_ready is not None:
            on_ready()
        todo = list(chunks)
        todo.reverse()
        pending: dict[Any, Sequence[BatchClaim]] = {}
        while todo or pending:
            while todo and len(pending) < 2 * max(1, workers):
                chunk = todo.pop()
                ref = task.remote(db, [(c.id, c.claim) for c in chunk], profile, threads)
                pending[ref] = chunk
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                chunk = pending.pop(ref)
                try:
                    yield list(ray.get(ref))
                except (ray.exceptions.RayError, RuntimeError) as exc:
                    yield on_error(chunk, exc)
    finally:
        if started:
            ray.shutdown()
