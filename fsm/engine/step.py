"""What one step of the driver produces, and the per-step tool caller it is given.

Re-exported by :mod:`claimfsm.engine.driver`, where these names have always been imported from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from claimfsm._base.record import FACTORY, Record
from claimfsm.skills.context import Clock, ToolCall
from claimfsm.skills.envelope import Envelope
from claimfsm.state.model import Revision, SessionState

__all__ = ["StepResult", "ToolSession", "ToolsFactory", "iso"]


class ToolSession(Protocol):
    """A per-step tool caller that also reports what it did."""

    calls: list[ToolCall]
    events: list[dict[str, Any]]
    policy_state: dict[str, Any]

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall: ...


#: Builds the tool session for one step from the session state and the clock.
ToolsFactory = Callable[[SessionState, Clock], ToolSession]


def iso(ts: datetime) -> str:
    """The one timestamp format in revisions and records (always with microseconds)."""
    # The plain call is a quarter cheaper and only drops the fraction when it is zero.
    return ts.isoformat() if ts.microsecond else ts.isoformat(timespec="microseconds")


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class StepResult(Record):
    """What one step did: the envelope, and the revision if one was committed."""

    sid: str
    before: str
    after: str
    skill: str | None
    envelope: Envelope
    revision: Revision | None
    input: dict[str, Any] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)
    ts: str = ""
    #: The commit lost its compare-and-set: another writer moved the head first.
    lost_race: bool = False

    def __init__(self, sid: str, before: str, after: str, skill: str | None,
                 envelope: Envelope, revision: Revision | None,
                 input: dict[str, Any] = FACTORY, calls: list[ToolCall] = FACTORY,
                 ts: str = "", lost_race: bool = False) -> None:
        self.sid = sid
        self.before = before
        self.after = after
        self.skill = skill
        self.envelope = envelope
        self.revision = revision
        self.input = {} if input is FACTORY else input
        self.calls = [] if calls is FACTORY else calls
        self.ts = ts
        self.lost_race = lost_race

    @property
    def committed(self) -> bool:
        """Whether the step landed a revision."""
        return self.revision is not None
