"""The record line each kind of stored revision makes: a step's, a migration's, a
rewind's and the end line, with who (the actor) the revision names.

Its own module because both writers build lines from revisions: the export
(:func:`~claimfsm.replay.write.export_record`) rebuilds every line of a stored history,
the recorder (:class:`~claimfsm.replay.write.Recorder`) its rewind and end lines as the
session runs. A person's line is :func:`claimfsm.replay.people.person_of`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimfsm.engine.bindings import Binding
from claimfsm.engine.migrate import MIGRATE
from claimfsm.engine.people import ACTOR
from claimfsm.engine.version import CROSSINGS
from claimfsm.replay.people import person_of
from claimfsm.replay.record import End, Entry, RecordError, Rewind, Step
from claimfsm.skills.context import ToolCall
from claimfsm.state.model import Revision

__all__ = ["actor_of", "end_of", "entry_of", "rewind_of", "tool_events"]

# Events the driver adds to a step's revision after the tool runtime's own: a replay
# makes them again (the actor's from the line's ``actor``), so a record holds only the
# others.
_DRIVER_EVENTS = frozenset({"ToolCalls", "LimitExceeded", "Rollback", "RetryScheduled",
                            "Migrated", "VersionContinued", "Waiting", ACTOR})


def actor_of(events: list[dict[str, Any]], kind: str) -> str | None:
    """Who made the ``kind`` event of ``events`` (started, stepped or rewound the
    session), when an API key's name was recorded; else ``None``."""
    actor = next((e.get("actor") for e in events if e.get("type") == kind), None)
    return actor if isinstance(actor, str) else None


def tool_events(rev: Revision) -> list[dict[str, Any]]:
    """The tool runtime's events of revision ``rev`` (the driver's own left out)."""
    return [e for e in rev.events if e.get("type") not in _DRIVER_EVENTS]


def end_of(rev: Revision, h: str | None) -> End:
    """The end line of ``rev``, a final head (``h``: its chain hash)."""
    verdict = rev.state.verdict.get("label") if rev.state.verdict else None
    return End(rev=rev.rev, fsm=rev.fsm, verdict=verdict, h=h)


def entry_of(parent: Revision, rev: Revision, bindings: Mapping[str, Binding],
             h: str | None) -> Entry:
    """The line of ``rev``, committed on ``parent``: a step's input rebuilt by its skill's
    binding from ``bindings`` (``h``: the revision's chain hash)."""
    if rev.skill == "rewind":
        return rewind_of(rev, h)
    if rev.skill == MIGRATE and rev.envelope is not None:
        return _migrate_of(parent, rev, h)
    person = person_of(parent, rev, h)
    if person is not None:  # an input, an edit, a resume or a timeout: no skill ran
        return person
    binding = bindings.get(rev.skill or "")
    if binding is None or rev.envelope is None:
        raise RecordError(f"revision {rev.rev}: skill {rev.skill!r} has no binding to "
                          "rebuild its input from", source=rev.sid)
    st = {"sid": parent.sid, "rev": parent.rev, "fsm": parent.fsm}
    calls: list[ToolCall] = []
    for event in rev.events:
        if event.get("type") == "ToolCalls":
            calls.extend(ToolCall.model_validate(c) for c in event.get("calls", []))
    return Step(head=parent.rev, rev=rev.rev, before=parent.fsm, after=rev.fsm,
                skill=rev.skill, committed=True, ts=rev.ts,
                input=binding.to_input(parent.state, st), calls=calls,
                events=tool_events(rev), envelope=dict(rev.envelope),
                policy=dict(rev.state.policy), runtime=dict(rev.state.runtime), h=h,
                actor=actor_of(rev.events, ACTOR))


def _migrate_of(parent: Revision, rev: Revision, h: str | None) -> Step:
    # A crossing to another version: its input is the two versions its event names.
    event = next((e for e in rev.events if e.get("type") in CROSSINGS), {})
    inp = {"from": event.get("from"), "to": event.get("to")}
    return Step(head=parent.rev, rev=rev.rev, before=parent.fsm, after=rev.fsm, skill=MIGRATE,
                committed=True, ts=rev.ts, input=inp, calls=[], events=tool_events(rev),
                envelope=dict(rev.envelope or {}), policy=dict(rev.state.policy),
                runtime=dict(rev.state.runtime), h=h, actor=actor_of(rev.events, ACTOR))


def rewind_of(rev: Revision, h: str | None) -> Rewind:
    """The rewind line of ``rev``, a revision ``Driver.rollback`` committed."""
    to = next((e.get("to") for e in rev.events if e.get("type") == "Rewind"), None)
    if not isinstance(to, int) or rev.parent_rev is None:
        raise RecordError(f"revision {rev.rev}: rewind without a target", source=rev.sid)
    reopen = any(e.get("type") == "Rewind" and e.get("reopen") is True for e in rev.events)
    return Rewind(head=rev.parent_rev, rev=rev.rev, to=to, ts=rev.ts, reopen=reopen, h=h,
                  actor=actor_of(rev.events, "Rewind"))
