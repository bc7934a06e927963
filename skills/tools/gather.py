"""Independent tool calls of one step run at the same time, recorded as if one by one.

:func:`gather` runs a step's calls in waves of three phases, so that what is recorded
never depends on the order in which the calls finish:

1. **admit**, in plan order, on the caller's thread: the call's start is read off the
   injected clock, then every check of the executor (policies, deadline, budget, rate
   buckets). A refused call is finished here. A call whose policy refuses it while
   earlier calls of the wave are still to run starts the next wave instead (policies are
   order-sensitive: ``page_fetch`` before ``sentence_extract``), and a call refused by a
   rate limit ends the gather: the calls after it are not made (``None``), as a step
   running them one by one stops there.
2. **run**, at the same time: the admitted handlers on daemon threads, at most ``limit``
   at once and no more of one tool than its concurrency slots. Nothing shared is
   written here. At the step's deadline (read once, before the wave starts, and waited
   out in wall time) the gather stops waiting: the calls still running, or not started,
   are finished as ``DEADLINE_EXCEEDED``; their threads are left to end on their own and
   their answers are dropped.
3. **commit**, in plan order, on the caller's thread: policy bookkeeping, the end of the
   call read off the clock, the call and its event appended; a call that failed with a
   fallback code gets its fallback now, one by one.

Given a ``scope`` (RETRIEVAL passes its head revision) and the executor's ``answers``
resource, each call's answer is saved the moment it arrives: a process killed before the
step commits leaves them, and the same step run again from the same head takes them
instead of calling again (``claimfsm.state.answers``).

A resource with ``snapshot``/``restore`` (a failed call is undone on it) cannot be shared
by calls in flight: with one, the calls run one by one, each admitted, run and recorded
before the next, as :meth:`Executor.call` does, and no answer is saved.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
from pydantic import BaseModel

from claimfsm._base.observe import TOOL_HOOK
from claimfsm.skills.context import ToolCall
from claimfsm.skills.tools.core import Tool

if TYPE_CHECKING:
    from claimfsm.skills.tools.executor import Executor, _Failure

__all__ = ["ANSWERS_RESOURCE", "MAX_CONCURRENT_TOOLS", "CallRequest", "gather", "restorable"]

ANSWERS_RESOURCE = "answers"
"""The executor resource where answers are saved as they arrive (``claimfsm.state.answers``)."""

MAX_CONCURRENT_TOOLS = 64
"""The most calls a session may run at once (``config.max_concurrent_tools``)."""


class CallRequest(NamedTuple):
    """One call of a gather: what :meth:`Executor.call` takes."""

    tool: str
    args: Mapping[str, Any]
    call_id: str
    key: str | None = None


@dataclass
class _Try:
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


@dataclass
class _Slot:
    request: CallRequest
    tries: list[_Try]


class _Saved:
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


def _key(one: _Try) -> str:
    digest = hashlib.sha256(orjson.dumps(one.args, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"{one.cid}/{one.attempt}/{one.name}/{digest[:32]}"


def gather(ex: Executor, requests: Sequence[CallRequest], limit: int,
           scope: str | None = None) -> list[ToolCall | None]:
    """Run ``requests`` (``limit`` at a time) and return each one's final call in plan
    order; ``None`` for a call not made (see the module docstring)."""
    if len(requests) <= 1 or any(restorable(r) for r in ex.resources.values()):
        return _one_by_one(ex, requests)
    store = ex.resources.get(ANSWERS_RESOURCE) if scope is not None else None
    saved = _Saved(store, ex.session_id, scope) if store is not None and scope else None
    out: list[ToolCall | None] = []
    todo = list(requests)
    while todo:
        wave, stop, rest = _admit(ex, todo)
        _run(ex, wave, max(1, limit), saved)
        out += [_commit(ex, slot) for slot in wave]
        if stop:
            return out + [None] * len(rest)
        todo = rest
    return out


def _one_by_one(ex: Executor, requests: Sequence[CallRequest]) -> list[ToolCall | None]:
    out: list[ToolCall | None] = []
    for i, req in enumerate(requests):
        call = ex.call(req.tool, req.args, call_id=req.call_id, key=req.key)
        out.append(call)
        if call.code == "RATE_LIMITED":
            return out + [None] * (len(requests) - i - 1)
    return out


def restorable(resource: object) -> bool:
    """Whether a failed call is undone on ``resource`` (it has snapshot and restore)."""
    return callable(getattr(resource, "snapshot", None)) and callable(
        getattr(resource, "restore", None))


def _try(ex: Executor, name: str, args: Mapping[str, Any], attempt: int, cid: str) -> _Try:
    from claimfsm.skills.tools.executor import _Failure, _json_copy

    hook = TOOL_HOOK.get()
    began = time.perf_counter() if hook is not None else 0.0
    start = ex.clock.now()
    try:
        recorded = _json_copy(args)
    except (TypeError, orjson.JSONEncodeError) as exc:
        return _Try(name, {}, attempt, start, began, cid, end=ex.clock.now(),
                    failure=_Failure("BAD_ARGS", f"(root): args are not JSON ({exc})"))
    one = _Try(name, recorded, attempt, start, began, cid)
    try:
        one.tool, one.params, one.deadline = ex._admit(name, recorded, start)
        ex._consume(name)
    except _Failure as exc:
        one.failure, one.tool, one.end = exc, None, ex.clock.now()
    return one


def _admit(
    ex: Executor, todo: list[CallRequest]
) -> tuple[list[_Slot], bool, list[CallRequest]]:
    """The next wave: admitted calls, whether a rate limit ended the gather, what is left."""
    wave: list[_Slot] = []
    for i, req in enumerate(todo):
        first = _try(ex, req.tool, req.args, 1, req.call_id)
        if first.failure is not None and first.failure.code == "POLICY_DENIED" and wave:
            return wave, False, todo[i:]  # the denial may lift once the wave is committed
        tries = [first]
        target = ex.fallbacks.get(req.tool)
        if first.failure is not None and target is not None \
                and first.failure.code in ex.fallback_codes:
            tries.append(_try(ex, target, _fallback_args(ex, target, first.args), 2,
                              req.call_id))
        wave.append(_Slot(req, tries))
        last = tries[-1].failure
        if last is not None and last.code == "RATE_LIMITED":
            return wave, True, todo[i + 1:]
    return wave, False, []


def _fallback_args(ex: Executor, target: str, args: dict[str, Any]) -> dict[str, Any]:
    fallback = ex.registry.get(target)
    accepted = set(fallback.params.model_fields) if fallback is not None else set()
    return {k: v for k, v in args.items() if k in accepted}


def _work(ex: Executor, one: _Try, done: threading.Event,
          release: list[threading.Semaphore], saved: _Saved | None) -> None:
    from claimfsm.skills.tools.executor import _exception_failure, _Failure

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
            saved.save(_key(one), orjson.dumps({"code": failure.code, "message": failure.message,
                                                "value": failure.value}))
    else:
        if saved is not None:
            saved.save(_key(one), orjson.dumps({"ok": True, "value": dumped}))
    finally:
        one.finish(value, dumped, failure)
        for sem in release:
            sem.release()
        done.set()


def _answered(ex: Executor, one: _Try) -> tuple[BaseModel, dict[str, Any]]:
    assert one.tool is not None and one.params is not None
    return ex._handle(one.tool, one.params, one.deadline)


def _restored(one: _Try, body: bytes) -> bool:
    """Finish ``one`` with its saved answer (False: the answer is not readable)."""
    from claimfsm.skills.tools.executor import _Failure

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


def _run(ex: Executor, wave: list[_Slot], limit: int, saved: _Saved | None) -> None:
    """Phase 2: the wave's admitted attempts at once, waited for up to the deadline."""
    from claimfsm.skills.tools.executor import _Failure

    jobs = [slot.tries[-1] for slot in wave if slot.tries[-1].tool is not None]
    if saved is not None:  # answers a killed process got for this step are not asked again
        jobs = [one for one in jobs
                if not (_key(one) in saved.found and _restored(one, saved.found[_key(one)]))]
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


def _commit(ex: Executor, slot: _Slot) -> ToolCall:
    """Phase 3 for one request: its attempts recorded, then its fallback if it needs one."""
    from claimfsm.skills.tools.executor import _Failure

    call: ToolCall | None = None
    for one in slot.tries:
        failure = one.failure
        if failure is None and one.tool is not None and one.params is not None \
                and one.value is not None:
            try:
                ex._commit_policies(one.tool, one.params, one.value)
            except _Failure as exc:
                failure = exc
        value = one.dumped if failure is None else None
        call = ex._record(one.name, one.args, slot.request.call_id, slot.request.key,
                          one.attempt, one.start, value, failure, one.began,
                          end=one.end)
    assert call is not None
    req = slot.request
    target = ex.fallbacks.get(req.tool)
    if len(slot.tries) == 1 and not call.ok and target is not None \
            and call.code in ex.fallback_codes:
        return ex._attempt(target, _fallback_args(ex, target, call.args), req.call_id,
                           req.key, attempt=2)
    return call
