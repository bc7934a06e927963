"""The lines of a session record: a JSONL file, one header line, one line per step, an
end line.

Line kinds (field ``t``), each one orjson object with a fixed key order:

- ``header``: record format, engine version, machine, sid, claim, config, the start
  clock reading and what the tools were (``null``: the session ran without tools);
- ``step``: the head before the step, the revision committed (``null`` if none), FSM
  state before/after, skill, whether it committed, the clock reading, the skill's input,
  every tool call (args and result), the tool runtime's events, the envelope, and the
  tool runtime's bookkeeping the step committed (policy state; budget and rate buckets);
- ``rewind``: a rewind (``claimfsm rollback``) found in a stored history;
- ``person``: what a person (or a timer) committed: an input to a wait state, an edit,
  a resume, a passed wait deadline (docs/review.md);
- ``end``: written once the session reached a final state (rev, fsm, verdict), so a
  record cut short after a final step is detected as truncated.

Format 2 (this engine writes it) makes a record tamper-evident: every line carries ``h``,
the chain hash of the revision it stands for (the header: revision 0; an uncommitted
step: ``null``), and ends with its seal ``sum`` (:mod:`claimfsm.replay.seal`). Format 1
records (claimfsm 0.2 and older) carry neither and are read as *unverified*.

Reading lives in :mod:`claimfsm.replay.record`, writing in :mod:`claimfsm.replay.write`.
"""

from __future__ import annotations

import functools
import importlib.metadata
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict

from claimfsm.replay.seal import seal_line
from claimfsm.skills.context import ToolCall

__all__ = [
    "FORMAT_VERSION",
    "READABLE_FORMATS",
    "End",
    "Entry",
    "Header",
    "Person",
    "Record",
    "Rewind",
    "Step",
    "Summary",
    "encode_line",
    "engine_version",
]

#: The record format this engine writes.
FORMAT_VERSION = 2
#: The formats it reads: 1 (no seals, replayed as unverified) and 2.
READABLE_FORMATS = (1, 2)
#: Fields a format 1 line does not have.
FORMAT_2_FIELDS = frozenset({"h", "events"})


def _aware_iso(value: str) -> str:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a timezone: {value!r}")
    return value


#: A clock reading as recorded: ISO 8601 text with a timezone.
Timestamp = Annotated[str, AfterValidator(_aware_iso)]


class _Line(BaseModel):
    """Base of record lines: frozen, unknown fields refused."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")


class Header(_Line):
    """The first line: what ran, on what, from when; ``h`` is revision 0's chain hash."""

    t: Literal["header"] = "header"
    format: int
    engine: str
    machine: str
    sid: str
    claim: str
    config: dict[str, Any]
    ts: Timestamp
    tools: dict[str, Any] | None
    h: str | None = None
    #: The machine version the session started on (``None``: not recorded, an older
    #: record or session; the line then has no such key).
    version: str | None = None
    #: Who started it (an API key's name; ``None``: nobody recorded, no such key).
    actor: str | None = None


class Step(_Line):
    """One driver step, committed or not.

    ``events`` are the tool runtime's events of a committed step (what a replay answers
    with, as it answers calls from ``calls``); ``h`` the committed revision's chain hash;
    ``actor`` who asked for the step (its revision's ``Actor`` event), fed back to the
    step a replay takes so that it commits the same revision.
    """

    t: Literal["step"] = "step"
    head: int
    rev: int | None
    before: str
    after: str
    skill: str | None
    committed: bool
    ts: Timestamp
    input: dict[str, Any]
    calls: list[ToolCall]
    events: list[dict[str, Any]] | None = None
    envelope: dict[str, Any]
    policy: dict[str, Any] | None = None
    runtime: dict[str, Any] | None = None
    h: str | None = None
    #: Who asked for it (an API key's name; ``None``: nobody recorded, no such key).
    actor: str | None = None


class Rewind(_Line):
    """A rewind to revision ``to`` committed as revision ``rev`` (chain hash ``h``)."""

    t: Literal["rewind"] = "rewind"
    head: int
    rev: int
    to: int
    ts: Timestamp
    reopen: bool = False
    h: str | None = None
    #: Who asked for it (an API key's name; ``None``: nobody recorded, no such key).
    actor: str | None = None


class Person(_Line):
    """A revision a person committed (``act``: ``input``, ``edit``, ``resume``), a timer
    (``timeout``) or a fork's own first revision (``fork``), as revision ``rev`` after
    ``head``: ``payload`` is the input, the edit's ``[field, value]`` pairs, or the fork's
    ``{"from": {sid, rev}, "profile": {...} | None}``; ``h`` its chain hash."""

    t: Literal["person"] = "person"
    head: int
    rev: int
    act: Literal["input", "edit", "resume", "timeout", "fork"]
    before: str
    after: str
    actor: str | None
    ts: Timestamp
    payload: Any = None
    h: str | None = None


class End(_Line):
    """The session reached a final state: the last line of a finished record (``h``: the
    last revision's chain hash)."""

    t: Literal["end"] = "end"
    rev: int
    fsm: str
    verdict: str | None
    h: str | None = None


Entry = Step | Rewind | Person
KINDS: dict[str, type[_Line]] = {"header": Header, "step": Step, "rewind": Rewind,
                                 "person": Person, "end": End}


class Summary:
    """What a replay needs to know of a record before running it, gathered line by line:
    counts, the last entry, every rewind target, and the FSM state of the last revision
    (``None``: the machine's initial state)."""

    def __init__(self) -> None:
        self.entries = 0
        self.steps = 0
        self.last: Entry | None = None
        self.targets: set[int] = set()
        self.head = 0
        self._names: list[str | None] = [None]
        self._ids: dict[str | None, int] = {None: 0}
        # The state of every revision (an index into the names), two bytes each: a rewind
        # can go back to any of them.
        self._fsm = array("H", [0])

    def add(self, entry: Entry) -> None:
        """Count ``entry`` (already checked to follow the chain)."""
        self.entries += 1
        self.last = entry
        if isinstance(entry, Rewind):
            self.targets.add(entry.to)
            self._fsm.append(self._fsm[entry.to])
            self.head = entry.rev
            return
        if isinstance(entry, Person):  # a committed revision, like a step's
            self._append(entry.after, entry.rev)
            return
        self.steps += 1
        if entry.rev is not None:
            ident = self._ids.get(entry.after)
            if ident is None:
                ident = self._ids[entry.after] = len(self._names)
                self._names.append(entry.after)
            self._fsm.append(ident)
            self.head = entry.rev

    def _append(self, after: str, rev: int) -> None:
        ident = self._ids.get(after)
        if ident is None:
            ident = self._ids[after] = len(self._names)
            self._names.append(after)
        self._fsm.append(ident)
        self.head = rev

    @property
    def head_fsm(self) -> str | None:
        """The last revision's FSM state (``None``: revision 0's, the initial state)."""
        return self._names[self._fsm[self.head]]


@dataclass(frozen=True)
class Record:
    """A parsed record; ``source`` names the file it came from (for messages).

    ``verified``: its lines were read and matched their seals (format 2); a record built
    in memory, or read from a format 1 file, is not.
    """

    header: Header
    entries: tuple[Entry, ...]
    end: End | None = None
    source: str = ""
    verified: bool = field(default=False, compare=False)
    _summary: list[Summary] = field(default_factory=list, repr=False, compare=False)

    @property
    def format(self) -> int:
        """The record format (the header's)."""
        return self.header.format

    @property
    def steps(self) -> tuple[Step, ...]:
        """The step lines only."""
        return tuple(e for e in self.entries if isinstance(e, Step))

    @property
    def summary(self) -> Summary:
        """Counts, last entry, rewind targets (computed once)."""
        if not self._summary:
            summary = Summary()
            for entry in self.entries:
                summary.add(entry)
            self._summary.append(summary)
        return self._summary[0]

    def walk(self) -> Iterator[tuple[int, Entry]]:
        """``(line number, entry)`` of every step and rewind line, in order."""
        return enumerate(self.entries, start=2)

    def calls(self) -> Iterator[tuple[list[ToolCall], list[dict[str, Any]] | None]]:
        """Every step's calls and tool events (the lenient replay's pool)."""
        for entry in self.entries:
            if isinstance(entry, Step) and entry.calls:
                yield entry.calls, entry.events

    def lines(self) -> Iterable[bytes]:
        """The record as JSONL lines (each ends with a newline), in its format."""
        fmt = self.header.format
        yield encode_line(self.header, fmt)
        for entry in self.entries:
            yield encode_line(entry, fmt)
        if self.end is not None:
            yield encode_line(self.end, fmt)

    def to_bytes(self) -> bytes:
        """The whole file."""
        return b"".join(self.lines())


def encode_line(line: BaseModel, fmt: int = FORMAT_VERSION) -> bytes:
    """One record line: compact orjson in field order, newline-terminated; sealed in
    format 2, without the format 2 fields in format 1."""
    # A header without a version, or a header, step or rewind without an actor, is
    # written as before those existed.
    drop: set[str] = set()
    if isinstance(line, Header) and line.version is None:
        drop.add("version")
    if isinstance(line, Header | Step | Rewind) and line.actor is None:
        drop.add("actor")
    if fmt < 2:
        return orjson.dumps(line.model_dump(mode="json",
                                            exclude=set(FORMAT_2_FIELDS) | drop)) + b"\n"
    return seal_line(line.model_dump(mode="json", exclude=drop))


@functools.cache
def engine_version() -> str:
    """The installed claimfsm version (what wrote the record)."""
    try:
        return importlib.metadata.version("claimfsm")
    except importlib.metadata.PackageNotFoundError:  # running from a bare checkout
        return "0+unknown"
