"""The driver's version check, and crossing a session to the running machine's version
as one committed revision.

A declared migration maps the old state to the new one (``Migrated`` event); without one,
``on_version="continue"`` keeps the state as it is (``VersionContinued`` event). Either
way the crossing is one revision committed with compare-and-set on the head, so among
racing workers exactly one crosses and the others see the crossed head; and a record
holds it as a step of the pseudo-skill ``migrate``, which a replay reproduces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claimfsm.engine.people import actor_event
from claimfsm.engine.step import StepResult, iso
from claimfsm.engine.version import UNKNOWN, VersionMismatch, session_version
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import RevConflict
from claimfsm.state.holds import VERSION_KEY
from claimfsm.state.model import Revision, SessionState, trusted

if TYPE_CHECKING:
    from claimfsm.engine.driver import Driver

__all__ = ["MIGRATE", "check_version", "cross"]

#: The skill name of a crossing revision (as ``rewind`` names a rewind's).
MIGRATE = "migrate"


def check_version(driver: Driver, head: Revision, seen: tuple[int, str] | None,
                  actor: str | None = None) -> StepResult | None:
    """``None`` when the session at ``head`` runs on ``driver``; otherwise the step taken
    for it (by a registered older driver, or the crossing to this version), or
    :class:`~claimfsm.engine.version.VersionMismatch`. ``pass`` (replays) runs every
    session on ``driver``, except one on a registered version. (The driver calls this
    only for a head it has not seen, ``seen`` being what it saw last; ``actor``: who asked
    for the step, recorded in what it commits.)"""
    on = driver.versioning.on_version
    if on == "pass" and not driver.registered:
        return None
    sid = head.sid
    have = seen[1] if seen is not None and seen[0] == head.rev else session_version(
        driver.store, head)
    if have == driver.version or have == UNKNOWN:  # older sessions keep working
        driver._remember(sid, head.rev)
        return None
    older = driver.registered.get(have)
    if older is not None:
        result = older._step(head, actor)
        if result.revision is not None:
            driver._remember(sid, result.revision.rev, have)
        return result
    if on == "pass":
        driver._remember(sid, head.rev)
        return None
    migrating = have in driver.versioning.migrations
    if not migrating and head.fsm not in driver.definition.names:
        driver._bind(sid, head.fsm)  # MACHINE_MISMATCH: its state is gone
    if migrating or on == "continue":
        result = cross(driver, head, have, actor)
        if result.revision is not None:
            driver._remember(sid, result.revision.rev)
        return result
    raise VersionMismatch(
        f"session {sid} is on version {have} of machine {driver.definition.name!r}, this "
        f"definition is version {driver.version}: declare a migration from {have}, keep the "
        "old definition registered, or continue it on this one (--on-version continue)",
        sid=sid)


def cross(driver: Driver, head: Revision, old: str, actor: str | None = None) -> StepResult:
    """Commit the crossing of the session at ``head`` from version ``old`` to
    ``driver``'s; the result's ``revision`` is ``None`` when it did not commit (a lost
    race, ``lost_race``; or a migration that failed, ``MIGRATION_FAILED``)."""
    versioning = driver.versioning
    new_version = versioning.version
    sid, fsm = head.sid, head.fsm
    ts = iso(driver.clock.now())
    inp: dict[str, Any] = {"from": old, "to": new_version}
    migrate = versioning.migrations.get(old)
    if migrate is None:
        state, kind = head.state, "VersionContinued"
    else:
        kind = "Migrated"
        try:
            state = migrate(head.state)
            problem = _problem(driver, head, state)
        except Exception as exc:  # a migration's bug: report it, touch nothing
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            env = Envelope.error("MIGRATION_FAILED", f"migration from {old}: {problem}")
            return _report(driver, StepResult(sid, fsm, fsm, MIGRATE, env, None, inp, ts=ts))
        # The migrated state is where a state rollback returns to from now on.
        state = state.model_copy(update={"entry_rev": head.rev + 1})
    # The version the session is on from here, where session_version reads it at once.
    state = state.model_copy(update={"runtime": {**state.runtime, VERSION_KEY: new_version}})
    after = state.fsm
    env = trusted(Envelope, {"s": "ok", "d": {**inp, "sp": {"rev": head.rev + 1, "fsm": after}},
                             "e": None, "rb": "none"})
    rev = trusted(Revision, {
        "sid": sid, "rev": head.rev + 1, "parent_rev": head.rev, "fsm": after,
        "skill": MIGRATE, "envelope": env.to_dict(), "state": state, "ts": ts,
        "events": [{"type": kind, **inp}, *([] if actor is None else [actor_event(actor)])],
    })
    result = StepResult(sid, fsm, fsm, MIGRATE, env, None, inp, ts=ts)
    try:
        result.revision = driver.store.commit(rev, expected_rev=head.rev)
    except RevConflict as exc:
        result.envelope = Envelope.error("REV_CONFLICT", exc.msg)
        result.lost_race = True
        return _report(driver, result)
    result.after = after
    return _report(driver, result)


def _problem(driver: Driver, head: Revision, state: object) -> str | None:
    if not isinstance(state, SessionState):
        return f"returned {type(state).__name__}, not a SessionState"
    if state.sid != head.sid:
        return f"sid: changed from {head.sid!r} to {state.sid!r}"
    if state.fsm not in driver.definition.names:
        return f"fsm: {state.fsm!r} is not a state of machine {driver.definition.name!r}"
    return None


def _report(driver: Driver, result: StepResult) -> StepResult:
    if driver.on_step is not None:
        driver.on_step(result)
    return result
