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

Before the replay runs, every line of the record was checked against its seal (by the
reader); while it runs, strict and tools mode recompute each revision's chain hash and
compare it with the line's ``h`` (format 2 records).

After the first divergence the replay keeps going (tools answered leniently) until the
session ends, so the report can say whether the verdict changed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Protocol

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.driver import Driver, ToolsFactory
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef
from claimfsm.engine.migrate import MIGRATE, cross
from claimfsm.engine.runtime import seed_demo
from claimfsm.engine.version import UNKNOWN, Versioning, machine_version
from claimfsm.replay.compare import Chain, compare_step, divergence_at
from claimfsm.replay.people import replay_person
from claimfsm.replay.record import (
    End,
    Entry,
    Header,
    Person,
    RecordError,
    Rewind,
    Step,
    Summary,
)
from claimfsm.replay.report import MODES, Divergence, Mode, Outcome, ReplayReport
from claimfsm.replay.store import ReplayStore
from claimfsm.replay.tools import CallSource, RecordedTools, ReplayClock, runtime_from_info
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.errors import StoreError
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore

__all__ = [
    "MODES",
    "Divergence",
    "Mode",
    "Outcome",
    "ReplayReport",
    "Replayable",
    "replay_record",
]


class Replayable(CallSource, Protocol):
    """What a replay reads: a :class:`~claimfsm.replay.record.Record` in memory or a
    :class:`~claimfsm.replay.source.RecordFile` read as it goes."""

    @property
    def header(self) -> Header: ...

    @property
    def end(self) -> End | None: ...

    @property
    def source(self) -> str: ...

    @property
    def verified(self) -> bool: ...

    @property
    def summary(self) -> Summary: ...

    def walk(self) -> Iterator[tuple[int, Entry]]: ...


def replay_record(
    record: Replayable,
    mode: Mode = "strict",
    *,
    machine: MachineDef = DEFAULT_MACHINE,
    bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
    index: EvidenceIndex | None = None,
    store: StateStore | None = None,
    max_extra_steps: int = 1000,
    versioning: Versioning | None = None,
    registered: Iterable[tuple[MachineDef, Mapping[str, Binding]]] = (),
) -> ReplayReport:
    """Replay ``record`` in ``mode`` into ``store`` (default: an in-memory
    :class:`~claimfsm.replay.store.ReplayStore`, which keeps only the revisions a replay
    can still need; pass a store to inspect every replayed revision afterwards).

    ``index`` serves live mode (default: an in-memory index seeded with the demo corpus).
    The session starts on the version its header names; a replay compares behaviour,
    so it runs whatever the version, and a recorded crossing (a ``migrate`` step) is made
    again with ``versioning``'s migrations (default: none, so it continues). Steps taken
    on a version in ``registered`` (older definitions and their bindings, kept side by
    side) run on it, as they did.

    Raises :class:`RecordError` when the record does not fit the machine (other machine,
    a final step without its end line), and the reader's errors for a record file whose
    lines change while it is replayed.
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
    # A replay allocates many small, acyclic objects; the cyclic collector would re-scan
    # the long-lived ones over and over for nothing, so it pauses for the replay
    # (reference counting still frees everything) and resumes afterwards.
    collecting = gc.isenabled()
    gc.disable()
    try:
        version = versioning or Versioning(machine_version(machine, bindings))
        replaying = Versioning(version.version, version.migrations, "pass")
        older = list(registered)
        if store is None:  # a registered version is looked up in the whole history
            store = MemoryStore() if older else ReplayStore(record.summary.targets)
        return _run(record, mode, store, machine, bindings, clock, factory, recorded,
                    max_extra_steps, replaying, older)
    finally:
        if collecting:
            gc.enable()
        if own_index is not None:
            own_index.close()


def _check_fits(record: Replayable, machine: MachineDef) -> None:
    header = record.header
    summary = record.summary
    if not summary.entries:
        raise RecordError("the record has no steps: nothing to replay", line=2,
                          source=record.source)
    if header.machine != machine.name:
        raise RecordError(f"machine: the record is of {header.machine!r}, this replay runs "
                          f"{machine.name!r}", line=1, source=record.source)
    last = summary.last
    if record.end is None and isinstance(last, Step) and last.after in machine.finals:
        raise RecordError(f"truncated: the last step reaches final state {last.after} but the "
                          "end line is missing", line=summary.entries + 2,
                          source=record.source)


def _run(
    record: Replayable, mode: Mode, store: StateStore, machine: MachineDef,
    bindings: Mapping[str, Binding],
    clock: ReplayClock, factory: ToolsFactory | None, recorded: RecordedTools | None,
    max_extra: int, versioning: Versioning,
    registered: list[tuple[MachineDef, Mapping[str, Binding]]],
) -> ReplayReport:
    header = record.header
    older = {}
    for definition, bound in registered:
        version = machine_version(definition, bound)
        older[version] = Driver(store, machine=definition, bindings=bound, tools=factory,
                                clock=clock, new_sid=lambda: header.sid, sleep=lambda s: None,
                                versioning=Versioning(version, {}, "pass"))
    driver = Driver(store, machine=machine, bindings=bindings, tools=factory, clock=clock,
                    new_sid=lambda: header.sid, sleep=lambda s: None, versioning=versioning,
                    registered=older)
    first = driver.start(header.claim, sid=header.sid, config=header.config,
                         version=header.version or UNKNOWN, actor=header.actor)
    sid = first.sid
    finals = machine.finals
    chain = Chain(mode != "live" and header.h is not None)
    divergence = chain.check(1, first, first, header.h, None)
    steps = 0
    n = 1
    for n, entry in record.walk():
        head = store.head(sid)
        clock.set(entry.ts)
        if isinstance(entry, Person):  # fed at the same revision, as recorded
            rev, problem = replay_person(driver, head, entry, clock.current)
            if problem is not None or rev is None:
                problem = problem or ("act", entry.act, None)
                divergence = divergence or divergence_at(n, head, None, "COMMIT_MISMATCH",
                                                         *problem)
                break
            if divergence is None:
                divergence = chain.check(n, head, rev, entry.h, None)
            continue
        if isinstance(entry, Rewind):
            try:
                rev = driver.rollback(sid, entry.to, reopen=entry.reopen, actor=entry.actor)
            except (StoreError, ClaimFsmError) as exc:
                divergence = divergence or divergence_at(n, head, None, "COMMIT_MISMATCH",
                                                         "to", entry.to, exc.code)
                break
            if divergence is None:
                divergence = chain.check(n, head, rev, entry.h, None)
            continue
        if head.fsm in finals:
            divergence = divergence or divergence_at(n, head, entry.skill, "SESSION_ENDED",
                                                     "before", entry.before, head.fsm)
            break
        if recorded is not None:
            recorded.load(entry)
        if entry.skill == MIGRATE:
            result = cross(driver, head, str(entry.input.get("from")), entry.actor)
        else:
            result = driver.step(sid, actor=entry.actor)
        steps += 1
        if divergence is None:
            divergence = compare_step(n, head, entry, result, recorded, strict=mode == "strict")
            if divergence is None and result.revision is not None:
                divergence = chain.check(n, head, result.revision, entry.h, entry.skill)
            if divergence is not None and recorded is not None:
                recorded.lenient = True  # keep going to learn the outcome
    if divergence is not None:
        steps += _finish(driver, sid, clock, recorded, max_extra)
    head = store.head(sid)
    expected = _expected(record, machine.initial)
    actual = Outcome(fsm=head.fsm, rev=head.rev, verdict=_verdict(head), steps=steps)
    if divergence is None and record.end is not None:
        # The closing line is a claim about the session too: check it, never trust it.
        n += 1
        for path, exp, act in (("end.fsm", expected.fsm, actual.fsm),
                               ("end.rev", expected.rev, actual.rev),
                               ("end.verdict", expected.verdict, actual.verdict)):
            if exp != act:
                divergence = divergence_at(n, head, None, "END_MISMATCH", path, exp, act)
                break
    return ReplayReport(source=record.source, mode=mode, sid=sid, steps=steps,
                        ok=divergence is None, divergence=divergence, expected=expected,
                        actual=actual, verdict_changed=expected.verdict != actual.verdict,
                        format=header.format, verified=record.verified)


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


def _expected(record: Replayable, initial: str) -> Outcome:
    summary = record.summary
    if record.end is not None:
        return Outcome(fsm=record.end.fsm, rev=record.end.rev, verdict=record.end.verdict,
                       steps=summary.steps)
    return Outcome(fsm=summary.head_fsm or initial, rev=summary.head, verdict=None,
                   steps=summary.steps)
