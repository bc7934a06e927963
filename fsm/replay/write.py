"""Writing records: the recorder (the driver's ``on_step`` hook) and the export of a
stored session, which rebuilds the same lines from its revisions, each line with its
revision's chain hash and sealed (:mod:`claimfsm.replay.seal`); the line each kind of
revision makes is :mod:`claimfsm.replay.entries`'s.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.driver import StepResult
from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.people import ACTOR
from claimfsm.engine.version import started_version
from claimfsm.replay.entries import actor_of, end_of, entry_of, rewind_of, tool_events
from claimfsm.replay.people import person_of
from claimfsm.replay.record import (
    FORMAT_VERSION,
    Entry,
    Header,
    Record,
    Step,
    encode_line,
    engine_version,
    read_record,
)
from claimfsm.replay.seal import HashChain
from claimfsm.state.model import Revision
from claimfsm.state.store import StateStore

if TYPE_CHECKING:
    from claimfsm.engine.runtime import Engine

__all__ = [
    "RecordWriteError",
    "Recorder",
    "engine_record",
    "engine_tools",
    "export_record",
    "header_for",
    "step_from_result",
    "tool_events",
    "tools_info",
]


class RecordWriteError(ClaimFsmError):
    """The record file could not be written."""

    code = ErrorCode.RECORD_WRITE_FAILED


def tools_info(
    *, documents: int, facts: int, limits: Mapping[str, Any] | None = None,
    fallbacks: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The header's ``tools``: index size, rate limits (``{tool: {capacity, per_seconds}}``)
    and fallbacks; live replay rebuilds the same runtime from it."""
    return {"documents": documents, "facts": facts, "limits": dict(limits or {}),
            "fallbacks": dict(fallbacks or {})}


def engine_tools(eng: Engine) -> dict[str, Any]:
    """The header's ``tools`` for a session run by ``eng`` (the default runtime: its
    index's size and the default fallbacks)."""
    from claimfsm.engine.runtime import DEFAULT_FALLBACKS

    return tools_info(documents=eng.index.count_documents(), facts=eng.index.count_facts(),
                      fallbacks=DEFAULT_FALLBACKS)


def engine_record(eng: Engine, sid: str) -> Record:
    """What ``claimfsm export SID`` writes for a session of ``eng``'s store."""
    return export_record(eng.store, sid, tools=engine_tools(eng), bindings=eng.driver.bindings)


def header_for(first: Revision, tools: dict[str, Any] | None, machine: str,
               h: str | None = None) -> Header:
    """The header of the session that starts at revision ``first`` (``h``: its chain
    hash)."""
    return Header(format=FORMAT_VERSION, engine=engine_version(), machine=machine,
                  sid=first.sid, claim=first.state.claim, config=dict(first.state.config),
                  ts=first.ts, tools=tools, h=h, version=started_version(first.events),
                  actor=actor_of(first.events, "SessionStarted"))


def step_from_result(result: StepResult, head: int, h: str | None = None) -> Step:
    """The step line of one driver step taken at head revision ``head`` (``h``: the chain
    hash of the revision it committed)."""
    rev = result.revision
    return Step(head=head, rev=None if rev is None else rev.rev, before=result.before,
                after=result.after, skill=result.skill, committed=rev is not None,
                ts=result.ts, input=result.input, calls=list(result.calls),
                events=None if rev is None else tool_events(rev),
                envelope=result.envelope.to_dict(),
                policy=None if rev is None else dict(rev.state.policy),
                runtime=None if rev is None else dict(rev.state.runtime), h=h,
                actor=None if rev is None else actor_of(rev.events, ACTOR))


class Recorder:
    """Writes a record as the session runs; use as the driver's ``on_step`` hook.

    ``append=True`` continues an existing file (``claimfsm step --record``): it must be a
    format 2 record whose last revision is ``head``, the session's head when recording
    starts; the chain of hashes goes on from that revision's.
    """

    def __init__(self, path: str | Path, *, append: bool = False, head: int = 0,
                 finals: frozenset[str] = DEFAULT_MACHINE.finals,
                 machine: str = DEFAULT_MACHINE.name) -> None:
        self.path = Path(path)
        self.finals = finals
        self.machine = machine
        self.head = head
        self.chain = HashChain()
        self.ended = False
        if append and self.path.exists() and self.path.stat().st_size:
            self._resume(head)
        try:
            self._fh: IO[bytes] = self.path.open("ab" if append else "wb")
        except OSError as exc:
            raise RecordWriteError(f"{self.path}: {exc.strerror or exc}") from None

    def _resume(self, head: int) -> None:
        record = read_record(self.path)
        if record.format < FORMAT_VERSION:
            raise RecordWriteError(f"{self.path}: a format {record.format} record (no seals) "
                                   "cannot be continued; record into a new file")
        last = record.entries[-1] if record.entries else None
        h = record.header.h
        for entry in reversed(record.entries):
            if entry.h is not None:
                h = entry.h
                break
        rev = 0 if last is None else last.rev if last.rev is not None else last.head
        if rev != head or h is None:
            raise RecordWriteError(f"{self.path} ends at revision {rev}, not at {head}")
        self.chain.resume(rev, h)
        self.ended = record.end is not None

    def header(self, first: Revision, tools: dict[str, Any] | None) -> None:
        """Write the header line for the session that starts at ``first``."""
        self._write(encode_line(header_for(first, tools, self.machine, self.chain.add(first))))

    def write(self, record: Record) -> None:
        """Write a whole record (an export that a later step continues)."""
        self._write(record.to_bytes())
        hashed = [e for e in record.entries if e.h is not None]
        if hashed:
            last = hashed[-1]
            assert last.rev is not None and last.h is not None
            self.chain.resume(last.rev, last.h)
        elif record.header.h is not None:
            self.chain.resume(0, record.header.h)
        self.ended = record.end is not None
        if record.entries:
            last_entry = record.entries[-1]
            self.head = last_entry.rev if last_entry.rev is not None else last_entry.head

    def rewind(self, revision: Revision) -> None:
        """Write the rewind line of ``revision`` (what ``Driver.rollback`` committed), so a
        record made as the session runs holds its rewinds as an export would."""
        if self.ended:
            raise RecordWriteError(f"{self.path}: the record has its end line; a rewind "
                                   "after it starts a new record")
        line = rewind_of(revision, self.chain.add(revision))
        self.head = revision.rev
        self._write(encode_line(line))

    def person(self, parent: Revision, revision: Revision) -> None:
        """Write the ``person`` line of ``revision`` (an input, edit, resume or timeout
        committed on ``parent``): a record made live goes on past a wait as an export
        would."""
        if self.ended:
            raise RecordWriteError(f"{self.path}: the record has its end line")
        line = person_of(parent, revision, self.chain.add(revision))
        if line is None:
            raise RecordWriteError(f"revision {revision.rev} is not a person's")
        self.head = revision.rev
        out = encode_line(line)
        if revision.fsm in self.finals:
            out += encode_line(end_of(revision, self.chain.last))
            self.ended = True
        self._write(out)

    def end(self, revision: Revision) -> None:
        """Write the end line for ``revision``, the final head (the recorder writes it by
        itself after a step reaching one of ``finals``)."""
        self._write(encode_line(end_of(revision, self.chain.last)))
        self.ended = True

    def __call__(self, result: StepResult) -> None:
        rev = result.revision
        head = self.head if rev is None else rev.rev - 1
        h = None if rev is None else self.chain.add(rev)
        out = encode_line(step_from_result(result, head, h))
        ends = rev is not None and result.after in self.finals
        if rev is not None:
            self.head = rev.rev
            if ends:
                out += encode_line(end_of(rev, h))
        self._write(out)
        self.ended = self.ended or ends

    def _write(self, data: bytes) -> None:
        # One write and a flush per step: a crash leaves whole lines behind, at most the
        # last one cut short, which the reader reports as truncated.
        try:
            self._fh.write(data)
            self._fh.flush()
        except OSError as exc:
            raise RecordWriteError(f"{self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        """Close the file (a failure to flush was already reported by the write)."""
        with contextlib.suppress(OSError):
            self._fh.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def export_record(
    store: StateStore, sid: str, *, tools: dict[str, Any] | None,
    bindings: Mapping[str, Binding] = DEFAULT_BINDINGS, machine: str = DEFAULT_MACHINE.name,
    finals: frozenset[str] = DEFAULT_MACHINE.finals, hashes: bool = True,
) -> Record:
    """The record of a stored session, rebuilt from its revisions (``hashes=False``:
    without chain hashes, for a replay that compares behaviour only).

    Inputs come from the bindings applied to each parent revision's state (as the driver
    built them), tool calls from the revision's ``ToolCalls`` event, chain hashes from the
    revisions (the stores' own). Uncommitted steps leave no revision, so they are not in
    an export.
    """
    history = list(store.history(sid))
    chain = HashChain()
    add = chain.add if hashes else _no_hash
    first_h = add(history[0])
    entries: list[Entry] = []
    for parent, rev in itertools.pairwise(history):
        entries.append(entry_of(parent, rev, bindings, add(rev)))
    head = history[-1]
    last_h = entries[-1].h if entries else first_h
    end = end_of(head, last_h) if head.fsm in finals else None
    return Record(header=header_for(history[0], tools, machine, first_h),
                  entries=tuple(entries), end=end)


def _no_hash(rev: Revision) -> None:
    return None
