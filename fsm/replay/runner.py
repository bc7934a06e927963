"""Replay a session record and report the first divergence.

Modes:

- ``strict``: tools answered from the record in order, the clock set to each step's
  recorded reading, ids from the recorded sid; every envelope must equal the recorded one
  byte for byte. A call the record does not hold is an ``UNRECORDED_TOOL_CALL``
  divergence and never reaches a real tool.
- ``tools``: tool results from the record (matched on tool and args, in any order), the
  skills re-run: checks a changed skill against recorded evidence.
- ``live``: real tools over an evidence index (the bundled demo corpus unless one is
  given), rebuilt from the header's tools description; reports how the outcome differs.

After the first divergence the replay keeps going (tools answered leniently) until the
session ends, so the report can say whether the verdict changed.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from claimfsm._base.models import Frozen
from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.driver import Driver, StepResult, ToolsFactory
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef
from claimfsm.engine.runtime import seed_demo
from claimfsm.replay.diff import first_diff
from claimfsm.replay.record import Record, RecordError, Rewind, Step
from claimfsm.replay.tools import RecordedTools, ReplayClock, runtime_from_info
from claimfsm.skills.envelope import dumps
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.errors import StoreError
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore

__all__ = ["MODES", "Divergence", "Mode", "Outcome", "ReplayReport", "replay_record"]

Mode = Literal["strict", "tools", "live"]
MODES: tuple[Mode, ...] = ("strict", "tools", "live")


class Divergence(Frozen):
    """Where the replay first parted from the record.

    ``kind``: ``INPUT_MISMATCH`` (the skill got another input), ``ENVELOPE_MISMATCH``,
    ``UNRECORDED_TOOL_CALL``, ``MISSING_TOOL_CALL``,
    ``COMMIT_MISMATCH`` (same envelope, different commit or next state),
    ``SESSION_ENDED`` (the replay reached a final state with record lines left) or
    ``END_MISMATCH`` (every step matched but the closing line's state, revision or
    verdict is not the replayed session's).
    """

    step: int
    line: int
    state: str
    skill: str | None
    kind: str
    path: str
    expected: Any
    actual: Any


class Outcome(Frozen):
    """How a session ended: final FSM state, head revision, verdict, steps taken."""

    fsm: str
    rev: int
    verdict: str | None
    steps: int


class ReplayReport(Frozen):
    """The result of one replay; ``ok`` when nothing diverged."""

    source: str
    mode: Mode
    sid: str
    steps: int
    ok: bool
    divergence: Divergence | None
    expected: Outcome
    actual: Outcome
    verdict_changed: bool

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data (``replay --json``)."""
        return self.model_dump(mode="json")


def replay_record(
    record: Record,
    mode: Mode = "strict",
    *,
    machine: MachineDef = DEFAULT_MACHINE,
    bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
    index: EvidenceIndex | None = None,
    store: StateStore | None = None,
    max_extra_steps: int = 1000,
) -> ReplayReport:
    """Replay ``record`` in ``mode`` into ``store`` (default: a fresh in-memory store;
    pass one to inspect the replayed revisions afterwards).

    ``index`` serves live mode (default: an in-memory index seeded with the demo corpus).
    Raises :class:`RecordError` when the record does not fit the machine (other machine,
    a final step without its end line).
    """
    header = record.header
    _check_fits(record, machine)
    clock = ReplayClock(header.ts)
    recorded: RecordedTools | None = None
    factory: ToolsFactory | None = None
    own_index: EvidenceIndex | None = None
    if header.tools is not None:
        if mode == "live":
            if index is None:
                index = own_index = EvidenceIndex.open(":memory:")
                seed_demo(index)
            try:
                factory = runtime_from_info(index, header.tools)
            except ValueError as exc:
                raise RecordError(str(exc), line=1, source=record.source) from None
        else:
            factory = recorded = RecordedTools(record, lenient=mode == "tools")
    # A replay allocates many small, acyclic, long-lived objects (every revision is kept);
    # the cyclic collector would re-scan them over and over for nothing, so it pauses for
    # the replay (reference counting still frees everything) and resumes afterwards.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(record, mode, store or MemoryStore(), machine, bindings, clock, factory,
                    recorded, max_extra_steps)
    finally:
        if collecting:
            gc.enable()
        if own_index is not None:
            own_index.close()


def _check_fits(record: Record, machine: MachineDef) -> None:
    header = record.header
    if not record.entries:
        raise RecordError("the record has no steps: nothing to replay", line=2,
                          source=record.source)
    if header.machine != machine.name:
        raise RecordError(f"machine: the record is of {header.machine!r}, this replay runs "
                          f"{machine.name!r}", line=1, source=record.source)
    last = record.entries[-1] if record.entries else None
    if record.end is None and isinstance(last, Step) and last.after in machine.finals:
        raise RecordError(f"truncated: the last step reaches final state {last.after} but the "
                          "end line is missing", line=len(record.entries) + 2,
                          source=record.source)


def _run(
    record: Record, mode: Mode, store: StateStore, machine: MachineDef,
    bindings: Mapping[str, Binding],
    clock: ReplayClock, factory: ToolsFactory | None, recorded: RecordedTools | None,
    max_extra: int,
) -> ReplayReport:
    header = record.header
    driver = Driver(store, machine=machine, bindings=bindings, tools=factory, clock=clock,
                    new_sid=lambda: header.sid, sleep=lambda s: None)
    sid = driver.start(header.claim, sid=header.sid, config=header.config).sid
    finals = machine.finals
    divergence: Divergence | None = None
    steps = 0
    for n, entry in enumerate(record.entries, start=1):
        head = store.head(sid)
        clock.set(entry.ts)
        if isinstance(entry, Rewind):
            try:
                driver.rollback(sid, entry.to, reopen=entry.reopen)
            except (StoreError, ClaimFsmError) as exc:
                divergence = divergence or _div(n, head, None, "COMMIT_MISMATCH", "to",
                                                entry.to, exc.code)
                break
            continue
        if head.fsm in finals:
            divergence = divergence or _div(n, head, entry.skill, "SESSION_ENDED", "before",
                                            entry.before, head.fsm)
            break
        if recorded is not None:
            recorded.load(entry)
        result = driver.step(sid)
        steps += 1
        if divergence is None:
            divergence = _compare(n, head, entry, result, recorded, strict=mode == "strict")
            if divergence is not None and recorded is not None:
                recorded.lenient = True  # keep going to learn the outcome
    if divergence is not None:
        steps += _finish(driver, sid, clock, recorded, max_extra)
    head = store.head(sid)
    expected = _expected(record, machine.initial)
    actual = Outcome(fsm=head.fsm, rev=head.rev, verdict=_verdict(head), steps=steps)
    if divergence is None and record.end is not None:
        # The closing line is a claim about the session too: check it, never trust it.
        n = len(record.entries) + 1
        for path, exp, act in (("end.fsm", expected.fsm, actual.fsm),
                               ("end.rev", expected.rev, actual.rev),
                               ("end.verdict", expected.verdict, actual.verdict)):
            if exp != act:
                divergence = _div(n, head, None, "END_MISMATCH", path, exp, act)
                break
    return ReplayReport(source=record.source, mode=mode, sid=sid, steps=steps,
                        ok=divergence is None, divergence=divergence, expected=expected,
                        actual=actual, verdict_changed=expected.verdict != actual.verdict)


def _div(n: int, head: Revision, skill: str | None, kind: str, path: str, expected: Any,
         actual: Any) -> Divergence:
    return Divergence(step=n, line=n + 1, state=head.fsm, skill=skill, kind=kind, path=path,
                      expected=expected, actual=actual)


def _compare(n: int, head: Revision, entry: Step, result: StepResult,
             recorded: RecordedTools | None, *, strict: bool) -> Divergence | None:
    # The input first: a binding that builds it differently is the cause of whatever
    # follows, so it is the divergence to report.
    if dumps(entry.input) != dumps(result.input):
        found = first_diff(entry.input, result.input, "input")
        path, exp, act = found if found is not None else ("input", entry.input, result.input)
        return _div(n, head, entry.skill, "INPUT_MISMATCH", path, exp, act)
    if recorded is not None and recorded.unrecorded:
        miss = recorded.unrecorded[0]
        exp = None if miss.expected is None else {"tool": miss.expected.tool,
                                                  "args": miss.expected.args}
        return _div(n, head, entry.skill, "UNRECORDED_TOOL_CALL", f"calls[{miss.index}]",
                    exp, miss.call)
    actual_bytes = result.envelope.to_json()
    if dumps(entry.envelope) != actual_bytes:
        found = first_diff(entry.envelope, result.envelope.to_dict())
        path, exp, act = found if found is not None else ("(root)", entry.envelope,
                                                          result.envelope.to_dict())
        return _div(n, head, entry.skill, "ENVELOPE_MISMATCH", path, exp, act)
    if strict and recorded is not None and recorded.queue:
        left = recorded.queue[0]
        return _div(n, head, entry.skill, "MISSING_TOOL_CALL", f"calls[{recorded.made}]",
                    {"tool": left.tool, "args": left.args}, None)
    if result.committed != entry.committed or result.after != entry.after:
        return _div(n, head, entry.skill, "COMMIT_MISMATCH", "after",
                    f"{entry.after} (committed={entry.committed})",
                    f"{result.after} (committed={result.committed})")
    return None


def _finish(driver: Driver, sid: str, clock: ReplayClock, recorded: RecordedTools | None,
            max_extra: int) -> int:
    """Run a diverged session on to its end (as ``Driver.run`` would); steps taken."""
    taken = 0
    for _ in range(max_extra):
        head = driver.store.head(sid)
        if head.fsm in driver.definition.finals:
            break
        retry = head.state.retry
        if retry is not None and retry.next_at is not None and retry.state == head.fsm:
            clock.current = max(clock.current, datetime.fromisoformat(retry.next_at))
        if recorded is not None:
            recorded.load(None)
        taken += 1
        if not driver.step(sid).committed:
            break
    return taken


def _verdict(head: Revision) -> str | None:
    verdict = head.state.verdict
    label = verdict.get("label") if verdict else None
    return label if isinstance(label, str) else None


def _expected(record: Record, initial: str) -> Outcome:
    if record.end is not None:
        return Outcome(fsm=record.end.fsm, rev=record.end.rev, verdict=record.end.verdict,
                       steps=len(record.steps))
    fsm_of = {0: initial}
    rev = 0
    for entry in record.entries:
        if isinstance(entry, Rewind):
            fsm_of[entry.rev] = fsm_of.get(entry.to, initial)
            rev = entry.rev
        elif entry.rev is not None:
            fsm_of[entry.rev] = entry.after
            rev = entry.rev
    return Outcome(fsm=fsm_of[rev], rev=rev, verdict=None, steps=len(record.steps))
