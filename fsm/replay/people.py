"""Record and replay of what people commit (``person`` lines, docs/review.md): an input
to a wait state, an edit, a resume, a passed wait deadline.

Exporting reads them back from a revision's event (``InputReceived``, ``Edited``,
``Resumed``, ``TimedOut``); a replay feeds each to the driver at the same revision and
clock reading, and the stores' chain hash of what it commits is checked against the
line's ``h``, so an edited input (its payload, actor or time) is a divergence naming
its line, as an edited step is.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from claimfsm.engine.errors import ClaimFsmError
from claimfsm.replay.lines import Person
from claimfsm.state.errors import StoreError

if TYPE_CHECKING:
    from claimfsm.engine.driver import Driver
    from claimfsm.engine.step import StepResult
    from claimfsm.engine.tick import TickReport
    from claimfsm.replay.write import Recorder
    from claimfsm.state.model import Revision

__all__ = ["person_of", "replay_person", "tick_recorded"]

_ACTS = {"InputReceived": "input", "Edited": "edit", "Resumed": "resume",
         "TimedOut": "timeout", "Forked": "fork"}


def person_of(parent: Revision, rev: Revision, h: str | None) -> Person | None:
    """The ``person`` line of revision ``rev`` (``None``: a skill's step or a rewind)."""
    if rev.skill is not None or not rev.events:
        return None
    event = rev.events[0]
    act = _ACTS.get(str(event.get("type")))
    if act is None:
        return None
    payload: Any = None
    if act == "input":
        payload = event.get("payload")
    elif act == "edit":
        payload = [[c["field"], c["new"]] for c in event.get("changes", [])]
    elif act == "fork":  # the parent, and the profile a what-if runs on with
        payload = {"from": event.get("from"),
                   "profile": rev.state.config.get("profile") if event.get("changes") else None}
    return Person(head=parent.rev, rev=rev.rev, act=act,
                  before=parent.fsm, after=rev.fsm, actor=event.get("actor"), ts=rev.ts,
                  payload=payload, h=h)


def replay_person(driver: Driver, head: Revision, line: Person, now: datetime
                  ) -> tuple[Revision | None, tuple[str, Any, Any] | None]:
    """Commit ``line`` again on ``head``: the revision, or the divergence's (path,
    expected, actual) when it is refused or lands elsewhere."""
    sid, actor = head.sid, line.actor or ""
    try:
        if line.act == "input":
            rev = driver.input(sid, line.payload, expected_rev=head.rev, actor=actor)
        elif line.act == "edit":
            changes = [(str(f), v) for f, v in line.payload or ()]
            rev = driver.edit(sid, changes, expected_rev=head.rev, actor=actor)
        elif line.act == "resume":
            rev = driver.resume(sid, expected_rev=head.rev, actor=actor)
        elif line.act == "fork":
            rev = _refork(driver, head, line)
        else:
            found = driver.advance(sid, now)
            if found is None:
                return None, ("act", "timeout", "not due")
            rev = found
    except (StoreError, ClaimFsmError) as exc:
        return None, (line.act, line.payload, exc.code)
    if rev.fsm != line.after:
        return None, ("after", line.after, rev.fsm)
    return rev, None


def _refork(driver: Driver, head: Revision, line: Person) -> Revision:
    """The fork's own revision again, on the replayed copy of its parent's revisions."""
    from claimfsm.engine.lineage import fork_revision
    from claimfsm.engine.profile import stored_profile

    payload = line.payload if isinstance(line.payload, dict) else {}
    given = payload.get("from")
    parent: dict[str, Any] = given if isinstance(given, dict) else {}
    profile = payload.get("profile")
    chosen = stored_profile({"profile": profile}) if isinstance(profile, dict) else None
    mark = fork_revision(head, str(parent.get("sid", "")), line.ts, chosen, actor=line.actor)
    return driver.store.commit(mark, expected_rev=head.rev)


def tick_recorded(driver: Driver, rec: Recorder, sid: str, *, limit: int = 1000,
                  now: datetime | None = None) -> TickReport:
    """``claimfsm tick --record F``: a tick in which what it does to session ``sid`` (the
    record's) goes on in ``rec``: its passed deadline as a ``person`` line, a due retry
    and the steps after either as step lines. Other sessions advance as in any tick."""
    from claimfsm.engine.tick import run_on, tick

    def hook(result: StepResult) -> None:
        if result.sid == sid:
            rec(result)

    before = driver.on_step
    driver.on_step = hook
    try:
        report = tick(driver, limit=limit, now=now, run=False)
        for advanced in report.sids:
            head = driver.store.head(advanced)
            if advanced == sid and rec.head < head.rev:  # a timeout: no step ran
                rec.person(driver.store.get(sid, head.rev - 1), head)
            run_on(driver, head)
    finally:
        driver.on_step = before
    return report
