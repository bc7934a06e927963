"""What a skill receives besides its input: the clock, the id source and the tools.

Skills are pure given their input and this context. Time and ids never come from the
process directly, so a recorded session replays with the same readings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from claimfsm._base.record import FACTORY, Record

__all__ = [
    "Clock",
    "FixedClock",
    "IdSource",
    "SeqIds",
    "SkillContext",
    "SystemClock",
    "ToolCall",
    "ToolCaller",
]


@runtime_checkable
class Clock(Protocol):
    """A source of timezone-aware UTC datetimes."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock (UTC). ``freezegun`` freezes it in tests."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class FixedClock(Record):
    """A clock that only moves when told to (tests, replay)."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    tick: timedelta = field(default_factory=timedelta)

    def __init__(self, current: datetime = FACTORY, tick: timedelta = FACTORY) -> None:
        self.current = datetime(2026, 1, 1, tzinfo=UTC) if current is FACTORY else current
        self.tick = timedelta() if tick is FACTORY else tick

    def now(self) -> datetime:
        value = self.current
        self.current = self.current + self.tick
        return value

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward by ``delta``."""
        self.current = self.current + delta


class IdSource(Protocol):
    """Deterministic ids: ``next("t")`` -> ``"t1"``, ``"t2"``, ..."""

    def next(self, prefix: str) -> str: ...


@dataclass(init=False, repr=False, eq=False)
class SeqIds(Record):
    """Per-prefix counters; the default id source (deterministic by construction)."""

    counters: dict[str, int] = field(default_factory=dict)

    def __init__(self, counters: dict[str, int] = FACTORY) -> None:
        self.counters = {} if counters is FACTORY else counters

    def next(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}{n}"


class ToolCall(BaseModel):
    """One executed tool call, as data: what was asked and what came back."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str
    tool: str
    args: dict[str, Any]
    ok: bool
    value: dict[str, Any] | None = None
    message: str = ""
    code: str | None = None
    attempt: int = 1
    key: str | None = None


@runtime_checkable
class ToolCaller(Protocol):
    """How a skill reaches tools: the executor, or a recorded answer in replay."""

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall: ...


@dataclass(init=False, repr=False, eq=False)
class SkillContext(Record):
    """The injected clock, id source and tool caller a skill runs with."""

    clock: Clock = field(default_factory=SystemClock)
    ids: IdSource = field(default_factory=SeqIds)
    tools: ToolCaller | None = None

    def __init__(self, clock: Clock = FACTORY, ids: IdSource = FACTORY,
                 tools: ToolCaller | None = None) -> None:
        self.clock = SystemClock() if clock is FACTORY else clock
        self.ids = SeqIds() if ids is FACTORY else ids
        self.tools = tools
