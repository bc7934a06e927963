"""The Ray side of a batch: join or start a cluster, keep a window of chunk tasks in
flight, hand back each chunk's results as it finishes.

Ray retries a task whose worker process died (``max_retries``); the retried task reads
each claim's head and resumes it (:mod:`claimfsm.batch.worker`), which is what makes the
retry safe.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.batch.claims import BatchClaim
from claimfsm.engine.errors import ClaimFsmError, ErrorCode

if TYPE_CHECKING:
    from claimfsm.engine.profile import Profile
    from claimfsm.engine.sources import SourceSet
    from claimfsm.engine.version import OnVersion
    from claimfsm.observe.observer import ObserveSpec
    from claimfsm.state.open import Location

__all__ = ["RAY_RETRIES", "RayUnavailable", "TooManyWorkers", "check_workers",
           "ray_available", "ray_cpus", "run_on_ray"]

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


class TooManyWorkers(ClaimFsmError):
    """``--workers`` above the CPUs Ray reports (the message says how many)."""

    code = ErrorCode.TOO_MANY_WORKERS


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


def _local_cpus() -> int:
    """The CPUs a local Ray would find on this machine (its own count, which honours
    cgroup limits; else the CPUs this process may run on)."""
    try:
        from ray._private.utils import get_num_cpus

        return max(1, int(get_num_cpus()))
    except Exception:  # a private function: another Ray may not have it
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else os.cpu_count() or 1)


def _cluster_cpus() -> int:
    import ray

    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    return int(resources.get("CPU", 0))


def _bounded(workers: int | None, cpus: int, where: str) -> int:
    if workers is None:
        return max(1, cpus)
    if workers > cpus:
        raise TooManyWorkers(
            f"--workers {workers}: {where} reports {cpus} CPUs; use at most {cpus} (each "
            "Ray task takes one CPU, so more could only queue)", field="workers")
    return workers


def ray_cpus() -> int:
    """The CPUs Ray reports: the running Ray's (a caller's own), else what a local Ray
    would find on this machine."""
    import ray

    return _cluster_cpus() if ray.is_initialized() else _local_cpus()


def check_workers(workers: int | None, address: str | None) -> None:
    """Before anything is opened: :class:`TooManyWorkers` for more workers than the
    running Ray's CPUs, or than this machine's when a local Ray would be started (a
    cluster's are checked once joined); :class:`RayUnavailable` when nobody listens at
    ``address``."""
    import ray

    if address:
        _reachable(address)
    elif workers is not None and ray.is_initialized():
        _bounded(workers, _cluster_cpus(), "the running Ray")
    elif workers is not None:
        _bounded(workers, _local_cpus(), "Ray on this machine")


def _init(address: str | None, workers: int | None) -> tuple[bool, int]:
    """Connect (or start a local Ray with ``workers`` CPUs); ``(started, workers)``:
    whether this call started Ray, and the workers to use (``None``: every CPU). A
    ``workers`` above the CPUs Ray reports is :class:`TooManyWorkers`, raised before a
    local Ray starts (which would otherwise start that many worker processes)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if address:
        _reachable(address)
    if ray.is_initialized():  # a caller's own Ray (a library user, the tests) is used as is
        return False, _bounded(workers, _cluster_cpus(), "the running Ray")
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                               "logging_level": logging.WARNING}
    count = 0 if address else _bounded(workers, _local_cpus(), "Ray on this machine")
    try:
        if address:
            ray.init(address=address, **options)
        else:
            ray.init(num_cpus=count, _node_ip_address="127.0.0.1", **options)
    except RayUnavailable:
        raise
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError, ...
        where = f"--ray {address}" if address else "a local Ray"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayUnavailable(f"{where}: {first}", field="ray") from exc
    if address:
        try:
            count = _bounded(workers, _cluster_cpus(), f"the Ray cluster at {address}")
        except TooManyWorkers:
            ray.shutdown()
            raise
    return True, count


def run_on_ray(
    db: Location,
    chunks: Callable[[int], Iterator[Sequence[BatchClaim]]],
    *,
    workers: int | None,
    address: str | None,
    profile: Profile | None = None,
    observe: ObserveSpec | None = None,
    sources: SourceSet | None = None,
    on_error: Callable[[Sequence[BatchClaim], BaseException], list[dict[str, Any]]] = (
        lambda chunk, exc: []),
    on_ready: Callable[[int], None] | None = None,
    on_version: OnVersion = "refuse",
) -> Iterator[list[dict[str, Any]]]:
    """Yield each chunk's result lines as the chunk finishes (completion order).

    ``chunks(workers)`` cuts the claims for the number of workers used (``workers``, or
    every CPU Ray reports when it is ``None``); they are taken as the window needs them,
    never all at once. ``db``, ``profile``, ``observe`` and ``sources`` go to every task as
    they are (frozen values; Ray pickles them). First every worker opens its engine
    (``on_ready(workers)`` is called once they have), so the clock of a batch can leave
    out Ray's start-up and the workers' imports.

    At most ``2 * workers`` chunks are in flight, so a killed driver leaves little
    queued work behind. A chunk that fails for good (retries used up, or an error its
    worker could not turn into result lines) is passed to ``on_error``. A local Ray this
    call starts is stopped when it ends, however it ends: by ``ray.shutdown`` or, if this
    process is killed, by a :class:`~claimfsm.batch.reaper.Reaper`.
    """
    import ray

    from claimfsm.batch.reaper import Reaper, children, descendants
    from claimfsm.batch.worker import threads_for, verify_chunk, warm

    local = not address and not ray.is_initialized()
    reaper = Reaper() if local else None
    before = children(os.getpid()) if reaper is not None else set()
    main = threading.current_thread() is threading.main_thread()
    term = signal.getsignal(signal.SIGTERM) if main else None
    try:
        started, count = _init(address, workers)
    except BaseException:
        if reaper is not None:
            reaper.release()
        raise
    finally:
        # ray.init replaces SIGTERM's handler with one that raises SystemExit wherever
        # the main thread is, inside Ray's own calls too (which then abort): the
        # program's own handling of SIGTERM is put back.
        if main and term is not None:
            signal.signal(signal.SIGTERM, term)
    task = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(verify_chunk)
    threads = threads_for(db)
    try:
        warmer = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(warm)
        # Ray's stubs type a remote function by its first parameters only.
        ray.get([warmer.remote(db, profile, threads, on_version,  # type: ignore[call-arg]
                               observe, sources)
                 for _ in range(count)])
        if reaper is not None:  # Ray's processes (and the agents its raylet started)
            reaper.watch(descendants(children(os.getpid()) - before - {reaper.pid or 0}))
        if on_ready is not None:
            on_ready(count)
        todo = iter(chunks(count))
        pending: dict[Any, Sequence[BatchClaim]] = {}
        while True:
            while len(pending) < 2 * count and (chunk := next(todo, None)) is not None:
                ref = task.remote(db, [(c.id, c.claim) for c in chunk], profile, threads,
                                  on_version, observe, sources)
                pending[ref] = chunk
            if not pending:
                break
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
        if reaper is not None:
            reaper.release()
