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

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from claimfsm._base.observe import TOOL_HOOK
from claimfsm._base.record import Record
from claimfsm.skills.context import ToolCall
from claimfsm.skills.tools.inflight import Attempt, Saved, run_wave

if TYPE_CHECKING:
    from claimfsm.skills.tools.executor import Executor

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


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class _Slot(Record):
    """One request of a wave and its attempts so far."""

    request: CallRequest
    tries: list[Attempt]

    def __init__(self, request: CallRequest, tries: list[Attempt]) -> None:
        self.request = request
        self.tries = tries


def gather(ex: Executor, requests: Sequence[CallRequest], limit: int,
           scope: str | None = None) -> list[ToolCall | None]:
    """Run ``requests`` (``limit`` at a time) and return each one's final call in plan
    order; ``None`` for a call not made (see the module docstring)."""
    if len(requests) <= 1 or any(restorable(r) for r in ex.resources.values()):
        return _one_by_one(ex, requests)
    store = ex.resources.get(ANSWERS_RESOURCE) if scope is not None else None
    saved = Saved(store, ex.session_id, scope) if store is not None and scope else None
    out: list[ToolCall | None] = []
    todo = list(requests)
    while todo:
        wave, stop, rest = _admit(ex, todo)
        run_wave(ex, [slot.tries[-1] for slot in wave if slot.tries[-1].tool is not None],
                 max(1, limit), saved)
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


def _try(ex: Executor, name: str, args: Mapping[str, Any], attempt: int, cid: str) -> Attempt:
    from claimfsm.skills.tools.executor import _json_copy
    from claimfsm.skills.tools.outcome import _Failure

    hook = TOOL_HOOK.get()
    began = time.perf_counter() if hook is not None else 0.0
    start = ex.clock.now()
    try:
        recorded = _json_copy(args)
    except (TypeError, orjson.JSONEncodeError) as exc:
        return Attempt(name, {}, attempt, start, began, cid, end=ex.clock.now(),
                       failure=_Failure("BAD_ARGS", f"(root): args are not JSON ({exc})"))
    one = Attempt(name, recorded, attempt, start, began, cid)
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


def _commit(ex: Executor, slot: _Slot) -> ToolCall:
    """Phase 3 for one request: its attempts recorded, then its fallback if it needs one."""
    from claimfsm.skills.tools.outcome import _Failure

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
