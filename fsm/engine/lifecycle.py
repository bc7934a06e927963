"""The driver's methods that make or rewind a session rather than step it: start, rollback
and fork.

Each writes once through the store (create, commit on the head read, or one fork commit)
and none runs a skill, so they stand apart from the step: the step's code in
:mod:`claimfsm.engine.driver` is the hot path, these run once per session or on request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from claimfsm.engine.errors import SessionFailed, check_claim
from claimfsm.engine.limits import initial_runtime
from claimfsm.engine.people import check_actor, check_pauses, hold_for
from claimfsm.engine.step import iso
from claimfsm.engine.version import UNKNOWN
from claimfsm.state.holds import HOLD_KEY
from claimfsm.state.model import Revision, new_state, trusted
from claimfsm.state.rollback import rewind_revision

if TYPE_CHECKING:
    from claimfsm.engine.machine import MachineDef
    from claimfsm.engine.profile import Profile
    from claimfsm.skills.context import Clock
    from claimfsm.state.store import StateStore

__all__ = ["LifecycleMixin"]


class LifecycleMixin:
    """Start, rollback and fork for :class:`~claimfsm.engine.driver.Driver`."""

    store: StateStore
    definition: MachineDef
    clock: Clock
    new_sid: Callable[[], str]
    version: str

    def _remember(self, sid: str, rev: int, version: str | None = None) -> None:
        raise NotImplementedError  # the driver's

    def start(
        self, claim: str, *, sid: str | None = None, config: Mapping[str, Any] | None = None,
        before_create: Callable[[Revision], None] | None = None, version: str | None = None,
        actor: str | None = None,
    ) -> Revision:
        """Create a session at revision 0 in the initial state, on this machine's version
        (``version``: another one, as a replay of an older record starts it; ``unknown``:
        none, as sessions were stored before versions existed). ``actor`` (who started
        it: an API key's name) goes into the ``SessionStarted`` event; ``None`` adds nothing.

        ``before_create`` sees revision 0 before it is stored: if it raises, nothing is
        (``--record`` writes the record's header there, so a record file that cannot be
        written leaves no session behind).

        Raises :class:`~claimfsm.engine.errors.InputTooLarge` (nothing stored) for a claim over
        :data:`claimfsm.skills.limits.MAX_CLAIM_CHARS` characters and
        :class:`~claimfsm.engine.errors.BadInput`
        for one that is not valid Unicode text (lone surrogates).
        """
        check_claim(claim)
        if actor is not None:
            check_actor(actor)
        sid = sid or self.new_sid()
        initial = self.definition.initial
        now = self.clock.now()
        config = dict(config or {})
        check_pauses(self.definition, config)
        runtime = initial_runtime(config, now)
        events: list[dict[str, Any]] = [_started(version or self.version, actor)]
        hold = hold_for(self.definition, config, None, initial, iso(now), now)
        if hold is not None:  # paused before (or waiting in) the first state
            runtime[HOLD_KEY] = hold
            events.append({"type": "Waiting", "hold": hold})
        # The claim and config come from outside: validated here, once.
        state = new_state(sid, claim, initial, config, runtime)
        first = trusted(Revision, {
            "sid": sid, "rev": 0, "parent_rev": None, "fsm": initial, "skill": None,
            "envelope": None, "state": state, "ts": iso(now),
            "events": events,
        })
        if before_create is not None:
            before_create(first)
        created = self.store.create(first)
        self._remember(sid, 0, None if version in (None, UNKNOWN, self.version) else version)
        return created

    def rollback(self, sid: str, to: int, *, reopen: bool = False,
                 actor: str | None = None) -> Revision:
        """Rewind: commit a new head equal to revision ``to`` (history is kept).

        The spent budget, rate buckets and deadline stay as they are at the head. A session
        in the machine's failure state is rewound only with ``reopen=True``, which the
        ``Rewind`` event records, as it records ``actor`` when given.
        """
        if actor is not None:
            check_actor(actor)
        head = self.store.head(sid)
        failed = head.fsm == self.definition.failure
        if failed and not reopen:
            raise SessionFailed(f"session {sid} is {head.fsm}; rolling it back needs reopen "
                                "(claimfsm rollback --reopen)", sid=sid)
        rev = rewind_revision(self.store, sid, to, ts=iso(self.clock.now()),
                              reopen=failed and reopen, actor=actor)
        return self.store.commit(rev, expected_rev=head.rev)

    def fork(self, sid: str, at: int, new_sid: str | None = None, *,
             profile: Profile | None = None, actor: str | None = None) -> Revision:
        """A new session whose history is ``sid``'s up to revision ``at``, then one
        revision of its own (``at + 1``, stamped now) recording its parent and, with
        ``profile`` (a what-if fork), the profile it runs on with
        (:mod:`claimfsm.engine.lineage`); its ``Forked`` event records ``actor`` when
        given. Returns that revision, the fork's head. The copy and that revision are one
        commit of the store (``StateStore.fork``'s ``then``): a crash leaves no fork or
        the whole of it. A ``full`` SQLite store does not fsync that commit by itself: the
        store's next commit (the fork's first step) or its ``close`` makes it durable, and
        a power cut before then loses all of the fork, never part (docs/storage.md,
        "Durability modes")."""
        from claimfsm.engine.lineage import fork_revision  # loads when forking

        if actor is not None:
            check_actor(actor)

        def own(copy: Revision) -> Revision:
            return fork_revision(copy, sid, iso(self.clock.now()), profile, actor=actor)

        return self.store.fork(sid, at, new_sid or self.new_sid(), then=own)


def _started(version: str, actor: str | None = None) -> dict[str, Any]:
    # Sessions without a version (or an actor) keep revision 0 as it always was.
    event: dict[str, Any] = {"type": "SessionStarted"}
    if version != UNKNOWN:
        event["version"] = version
    if actor is not None:
        event["actor"] = actor
    return event
