"""The running phase of :func:`claimfsm.skills.tools.gather.gather`: the admitted calls on
threads, bounded, waited for up to the deadline, their answers saved as they arrive.

Nothing here writes what the executor records: a call's outcome is kept on its
:class:`Attempt` (unless the call was cancelled first) and committed, in plan order, by
the gather.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

from claimfsm._base.record import FACTORY, Record
from claimfsm.skills.tools.core import Tool

if TYPE_CHECKING:
    from claimfsm.skills.tools.executor import Executor
    from claimfsm.skills.tools.outcome import _Failure

__all__ = ["Attempt", "Saved", "answer_key", "run_wave"]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Attempt(Record):
    """One attempt: admitted (``tool`` set, to run) or finished at admission (``end``)."""

    name: str
    args: dict[str, Any]
    attempt: int
    start: datetime
    began: float
    cid: str = ""
    tool: Tool[Any, Any] | None = None
    params: BaseModel | None = None
    deadline: datetime | None = None
    failure: _Failure | None = None
    end: datetime | None = None
    value: BaseModel | None = None
    dumped: dict[str, Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: bool = False

    def __init__(self, name: str, args: dict[str, Any], attempt: int, start: datetime,
                 began: float, cid: str = "", tool: Tool[Any, Any] | None = None,
                 params: BaseModel | None = None, deadline: datetime | None = None,
                 failure: _Failure | None = None, end: datetime | None = None,
                 value: BaseModel | None = None, dumped: dict[str, Any] | None = None,
                 lock: threading.Lock = FACTORY, finished: bool = False) -> None:
        self.name = name
        self.args = args
        self.attempt = attempt
        self.start = start
        self.began = began
        self.cid = cid
        self.tool = tool
        self.params = params
        self.deadline = deadline
        self.failure = failure
        self.end = end
        self.value = value
        self.dumped = dumped
        self.lock = threading.Lock() if lock is FACTORY else lock
        self.finished = finished

    def finish(self, value: BaseModel | None, dumped: dict[str, Any] | None,
               failure: _Failure | None) -> None:
        """The worker's outcome, kept unless the call was cancelled first."""
        with self.lock:
            if not self.finished:
                self.value, self.dumped, self.failure = value, dumped, failure
                self.finished = True

    def cancel(self, failure: _Failure) -> None:
        """Finish as ``failure`` unless the worker finished first."""
        self.finish(None, None, failure)


class Saved:
    """The answers of this step saved so far, and where to save more."""

    def __init__(self, store: Any, sid: str, scope: str) -> None:
        self.store, self.sid, self.scope = store, sid, scope
        self.lock = threading.Lock()
        try:
            self.found: dict[str, bytes] = store.load(sid, scope)
        except Exception:  # saving answers spares repeated calls; without it they are made
            self.store, self.found = None, {}

    def save(self, key: str, body: bytes) -> None:
        if self.store is None:
            return
        try:
            self.store.save(self.sid, self.scope, key, body)
        except Exception:  # as above: the call's answer stands, it is just not kept
            with self.lock:
                self.store = None


def _key(one: Attempt) -> str:
    digest = hashlib.sha256(orjson.dumps(one.args, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{one.cid}/{one.attempt}/{one.name}/{digest[:32]}"


def answer_key(one: Attempt) -> str:
    """Where ``one``'s answer is saved: call id, attempt, tool and a digest of the args."""
    digest = hashlib.sha256(orjson.dumps(one.args, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{one.cid}/{one.attempt}/{one.name}/{digest[:32]}"


def _work(ex: Executor, one: Attempt, done: threading.Event,
          release: list[threading.Semaphore], saved: Saved | None) -> None:
    from claimfsm.skills.tools.outcome import _exception_failure, _Failure

    assert one.tool is not None and one.params is not None
    limits = ex.limits
    value: BaseModel | None = None
    dumped: dict[str, Any] | None = None
    failure: _Failure | None = None
    try:
        if limits is not None and not limits.acquire(one.name):
            raise _Failure("CONCURRENCY_LIMITED", f"{one.name}: concurrency limit reached")
        try:
            value, dumped = _answered(ex, one)
        finally:
            if limits is not None:
                limits.release(one.name)
    except Exception as exc:
        failure = exc if isinstance(exc, _Failure) else _exception_failure(one.name, exc)
        if saved is not None and failure.code != "CONCURRENCY_LIMITED":  # the handler ran
            saved.save(answer_key(one), orjson.dumps(
                {"code": failure.code, "message": failure.message, "value": failure.value}))
    else:
        if saved is not None:
            saved.save(answer_key(one), orjson.dumps({"ok": True, "value": dumped}))
    finally:
        one.finish(value, dumped, failure)
        for sem in release:
            sem.release()
        done.set()


def _answered(ex: Executor, one: Attempt) -> tuple[BaseModel, dict[str, Any]]:
    assert one.tool is not None and one.params is not None
    return ex._handle(one.tool, one.params, one.deadline)


def _restored(one: Attempt, body: bytes) -> bool:
    """Finish ``one`` with its saved answer (False: the answer is not readable)."""
    from claimfsm.skills.tools.outcome import _Failure

    assert one.tool is not None
    try:
        saved = orjson.loads(body)
        if saved.get("ok"):
            value = one.tool.result.model_validate(saved["value"])
            one.finish(value, value.model_dump(mode="json"), None)
        else:
            one.finish(None, None, _Failure(str(saved["code"]), str(saved["message"]),
                                            saved.get("value")))
    except Exception:  # a row that does not read back: make the call again
        return False
    return True


def run_wave(ex: Executor, admitted: list[Attempt], limit: int, saved: Saved | None) -> None:
    """The ``admitted`` attempts at once (``limit`` at a time, each tool within its slots),
    waited for up to the deadline; an answer saved for one is taken instead of calling."""
    from claimfsm.skills.tools.outcome import _Failure

    jobs = admitted
    if saved is not None:  # answers a killed process got for this step are not asked again
        jobs = [one for one in jobs if not (answer_key(one) in saved.found
                                            and _restored(one, saved.found[answer_key(one)]))]
    if not jobs:
        return
    deadline = ex._deadline()
    until = None
    if deadline is not None:  # the injected clock's time left, waited out in wall time
        until = time.monotonic() + max(0.0, (deadline - ex.clock.now()).total_seconds())
    pool = threading.BoundedSemaphore(limit)
    slots = ex.limits.slots if ex.limits is not None else (lambda _name: None)
    per_tool: dict[str, threading.BoundedSemaphore] = {}
    done: dict[int, threading.Event] = {}
    for i, one in enumerate(jobs):
        n = slots(one.name)
        sems: list[threading.Semaphore] = [pool]
        if n is not None:
            sems.append(per_tool.setdefault(one.name, threading.BoundedSemaphore(n)))
        if not _acquire_all(sems, until):
            break
        done[i] = threading.Event()
        context = contextvars.copy_context()  # traces of a handler follow the step's
        threading.Thread(target=context.run, args=(_work, ex, one, done[i], sems, saved),
                         daemon=True, name=f"claimfsm-tool-{one.name}").start()
    for i, one in enumerate(jobs):
        left = None if until is None else max(0.0, until - time.monotonic())
        if i in done and done[i].wait(left):
            continue
        assert deadline is not None
        one.cancel(_Failure(
            "DEADLINE_EXCEEDED", f"{one.name}: deadline {deadline.isoformat()} passed before "
            "it answered; the call was cancelled"))


def _acquire_all(sems: list[threading.Semaphore], until: float | None) -> bool:
    """All of ``sems`` in order, or none of them once ``until`` has passed."""
    had: list[threading.Semaphore] = []
    for sem in sems:
        left = None if until is None else max(0.0, until - time.monotonic())
        if not sem.acquire(timeout=left):
            for got in had:
                got.release()
            return False
        had.append(sem)
    return True
