"""Session records: a JSONL file, one header line, one line per step, an end line.

Line kinds (field ``t``), each one orjson object with a fixed key order:

- ``header``: record format, engine version, machine, sid, claim, config, the start
  clock reading and what the tools were (``null``: the session ran without tools);
- ``step``: the head before the step, the revision committed (``null`` if none), FSM
  state before/after, skill, whether it committed, the clock reading, the skill's input,
  every tool call (args and result), the envelope, and the tool runtime's bookkeeping
  the step committed (policy state; budget and rate buckets spent);
- ``rewind``: a rewind (``claimfsm rollback``) found in a stored history;
- ``end``: written once the session reached a final state (rev, fsm, verdict), so a
  record cut short after a final step is detected as truncated.

:func:`read_record` checks every line and the chain of heads, and raises
:class:`RecordError` (``BAD_RECORD``) naming the line. Writing lives in
:mod:`claimfsm.replay.write` (the recorder and the export).
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.skills.base import describe_validation_error
from claimfsm.skills.context import ToolCall

__all__ = [
    "FORMAT_VERSION",
    "End",
    "Entry",
    "Header",
    "Record",
    "RecordError",
    "Rewind",
    "Step",
    "encode_line",
    "engine_version",
    "parse_record",
    "read_record",
]

#: The record format this engine writes and reads.
FORMAT_VERSION = 1


class RecordError(ClaimFsmError):
    """A record that cannot be read: ``line`` names the offending line (1-based),
    ``source`` the record's file."""

    code = ErrorCode.BAD_RECORD
    _where = (*ClaimFsmError._where, "line", "source")

    def __init__(self, msg: str, *, line: int | None = None, source: str = "") -> None:
        where = " ".join(p for p in (source, f"line {line}" if line else "") if p)
        super().__init__(f"{where}: {msg}" if where else msg)
        self.line = line
        self.source = source


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
    """The first line: what ran, on what, from when."""

    t: Literal["header"] = "header"
    format: int
    engine: str
    machine: str
    sid: str
    claim: str
    config: dict[str, Any]
    ts: Timestamp
    tools: dict[str, Any] | None


class Step(_Line):
    """One driver step, committed or not."""

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
    envelope: dict[str, Any]
    policy: dict[str, Any] | None = None
    runtime: dict[str, Any] | None = None


class Rewind(_Line):
    """A rewind to revision ``to`` committed as revision ``rev``."""

    t: Literal["rewind"] = "rewind"
    head: int
    rev: int
    to: int
    ts: Timestamp
    reopen: bool = False


class End(_Line):
    """The session reached a final state: the last line of a finished record."""

    t: Literal["end"] = "end"
    rev: int
    fsm: str
    verdict: str | None


Entry = Step | Rewind
_KINDS: dict[str, type[_Line]] = {"header": Header, "step": Step, "rewind": Rewind, "end": End}


@dataclass(frozen=True)
class Record:
    """A parsed record; ``source`` names the file it came from (for messages)."""

    header: Header
    entries: tuple[Entry, ...]
    end: End | None = None
    source: str = ""

    @property
    def steps(self) -> tuple[Step, ...]:
        """The step lines only."""
        return tuple(e for e in self.entries if isinstance(e, Step))

    def lines(self) -> Iterable[bytes]:
        """The record as JSONL lines (each ends with a newline)."""
        yield encode_line(self.header)
        for entry in self.entries:
            yield encode_line(entry)
        if self.end is not None:
            yield encode_line(self.end)

    def to_bytes(self) -> bytes:
        """The whole file."""
        return b"".join(self.lines())


def encode_line(line: BaseModel) -> bytes:
    """One record line: compact orjson in field order, newline-terminated."""
    return orjson.dumps(line.model_dump(mode="json")) + b"\n"


@functools.cache
def engine_version() -> str:
    """The installed claimfsm version (what wrote the record)."""
    try:
        return importlib.metadata.version("claimfsm")
    except importlib.metadata.PackageNotFoundError:  # running from a bare checkout
        return "0+unknown"


def read_record(path: str | Path) -> Record:
    """Read and check a record file (:class:`RecordError` on any problem)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror or exc}", source=str(p)) from None
    return parse_record(data, source=str(p))


def parse_record(data: bytes, *, source: str = "") -> Record:
    """Parse and check a record from its bytes."""
    raw = data.split(b"\n")
    complete = raw[-1] == b""
    if complete:
        raw.pop()
    if not raw:
        raise RecordError("empty record: no header line", line=1, source=source)
    header: Header | None = None
    entries: list[Entry] = []
    end: End | None = None
    head = 0
    for n, text in enumerate(raw, start=1):
        last_cut = n == len(raw) and not complete
        obj = _load_line(text, n, last_cut, source)
        if end is not None:
            raise RecordError("a line after the end line", line=n, source=source)
        if n == 1:
            if not isinstance(obj, Header):
                raise RecordError("the first line must be the header", line=n, source=source)
            if obj.format != FORMAT_VERSION:
                raise RecordError(f"format {obj.format} is not supported (this engine reads "
                                  f"{FORMAT_VERSION})", line=n, source=source)
            header = obj
            continue
        if isinstance(obj, Header):
            raise RecordError("a second header line", line=n, source=source)
        if isinstance(obj, End):
            if obj.rev != head:
                raise RecordError(f"end.rev is {obj.rev}, the last revision is {head}",
                                  line=n, source=source)
            end = obj
            continue
        assert isinstance(obj, Step | Rewind)
        head = _check_chain(obj, head, n, source)
        entries.append(obj)
    assert header is not None
    return Record(header=header, entries=tuple(entries), end=end, source=source)


def _load_line(text: bytes, n: int, cut: bool, source: str) -> _Line:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        what = "truncated line (cut short, no newline at the end)" if cut else "not JSON"
        raise RecordError(f"{what}: {exc}", line=n, source=source) from None
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object", line=n, source=source)
    kind = _KINDS.get(obj.get("t"))  # type: ignore[arg-type]
    if kind is None:
        raise RecordError(f"t: unknown line kind {obj.get('t')!r} (expected one of "
                          f"{', '.join(_KINDS)})", line=n, source=source)
    try:
        return kind.model_validate(obj)
    except ValidationError as exc:
        raise RecordError(describe_validation_error(exc), line=n, source=source) from None


def _check_chain(entry: Entry, head: int, n: int, source: str) -> int:
    if entry.head != head:
        raise RecordError(f"head is {entry.head}, expected {head} (a step is missing or "
                          "out of order)", line=n, source=source)
    if isinstance(entry, Rewind):
        if entry.rev != head + 1 or not 0 <= entry.to <= head:
            raise RecordError(f"rewind rev {entry.rev} to {entry.to} does not follow head "
                              f"{head}", line=n, source=source)
        return entry.rev
    if entry.committed != (entry.rev is not None):
        raise RecordError("committed and rev disagree", line=n, source=source)
    if entry.rev is None:
        if entry.after != entry.before:
            raise RecordError("an uncommitted step cannot change the state", line=n,
                              source=source)
        return head
    if entry.rev != head + 1:
        raise RecordError(f"rev is {entry.rev}, expected head+1 = {head + 1}", line=n,
                          source=source)
    return entry.rev


