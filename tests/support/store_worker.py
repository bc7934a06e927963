"""A child process for the crash and concurrency tests.

Run: ``python -m tests.support.store_worker``.

Modes (arguments after the mode):

- ``crash DB SID DURABILITY SNAPSHOT_EVERY``: resume ``SID`` from its head and commit
  revisions forever (content a pure function of the revision number, see
  :func:`expected_state`), printing each revision number (0 for a fresh session) once
  its commit returned; every 40 revisions it compacts the session. The test kills it
  with SIGKILL.
- ``race DB SID DURABILITY LAST WRITER GO``: print ``ready``; once file ``GO`` exists,
  race other writers on ``SID`` until its head reaches ``LAST``; prints ``W rev`` per
  win and ``C rev`` per :class:`RevConflict`.
- ``own DB SID DURABILITY LAST GO``: print ``ready``; once ``GO`` exists, create ``SID``
  and commit revisions ``1..LAST``; prints ``done``.
- ``forks DB DURABILITY``: make session ``src`` (revisions ``0..3``) unless there, then
  fork it at revision 3 forever (``f1``, ``f2``, ...: each with its own ``Forked``
  revision 4, as the engine forks), printing each fork's number once the fork returned.

Any other exception ends the process with a traceback and a non-zero status.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from claimfsm.state.errors import RevConflict, UnknownSession
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.sqlite import SQLiteStore

PAGE = "Crash-proof page text ✓ " * 40


def expected_state(sid: str, rev: int) -> SessionState:
    """The state every crash-mode revision ``rev`` must hold."""
    pages = {f"p{r}": {"text": PAGE + str(r)} for r in range(0, rev + 1, 5)}
    return SessionState(
        sid=sid, claim="crash test", fsm="RETRIEVAL", rounds=rev,
        steps=[{"n": r} for r in range(1, rev + 1)], pages=pages, memory={"n": rev},
    )


def revision(sid: str, rev: int, state: SessionState, **extra: Any) -> Revision:
    return Revision(
        sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
        skill=None if rev == 0 else "step", envelope=extra.get("envelope"), state=state,
        ts=f"t{rev}", events=extra.get("events", []),
    )


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _wait_for(path: str) -> None:
    _say("ready")
    while not os.path.exists(path):
        time.sleep(0.001)


def crash(db: str, sid: str, durability: Any, snapshot_every: str) -> None:
    with SQLiteStore(db, durability=durability, snapshot_every=int(snapshot_every)) as store:
        try:
            head = store.head(sid)
        except UnknownSession:
            head = store.create(revision(sid, 0, expected_state(sid, 0)))
            _say("0")
        state = head.state
        rev = head.rev
        while True:
            rev += 1
            update: dict[str, Any] = {
                "rounds": rev, "steps": [*state.steps, {"n": rev}], "memory": {"n": rev},
            }
            if rev % 5 == 0:
                update["pages"] = {**state.pages, f"p{rev}": {"text": PAGE + str(rev)}}
            state = state.model_copy(update=update)
            store.commit(revision(sid, rev, state, events=[{"n": rev}]), expected_rev=rev - 1)
            _say(str(rev))
            if rev % 40 == 0:
                store.compact(sid, prune=False)


def race(db: str, sid: str, durability: Any, last: str, writer: str, go: str) -> None:
    with SQLiteStore(db, durability=durability) as store:
        _wait_for(go)
        while True:
            head = store.head(sid)
            if head.rev >= int(last):
                return
            rev = head.rev + 1
            state = head.state.model_copy(update={"memory": {"writer": writer}, "rounds": rev})
            try:
                store.commit(revision(sid, rev, state), expected_rev=head.rev)
            except RevConflict:
                _say(f"C {rev}")
            else:
                _say(f"W {rev}")


def own(db: str, sid: str, durability: Any, last: str, go: str) -> None:
    with SQLiteStore(db, durability=durability) as store:
        _wait_for(go)
        state = SessionState(sid=sid, claim="own", fsm="PARSE_CLAIM")
        store.create(revision(sid, 0, state))
        for rev in range(1, int(last) + 1):
            state = state.model_copy(update={"rounds": rev, "steps": [*state.steps, {"n": rev}]})
            store.commit(revision(sid, rev, state), expected_rev=rev - 1)
        _say("done")


def forks(db: str, durability: Any) -> None:
    from claimfsm.state.contract_forks import forked_revision

    with SQLiteStore(db, durability=durability) as store:
        if "src" not in store.sessions():
            store.create(revision("src", 0, expected_state("src", 0)))
            for rev in range(1, 4):
                store.commit(revision("src", rev, expected_state("src", rev)),
                             expected_rev=rev - 1)
        n = len(store.sessions())
        while True:
            sid = f"f{n}"
            store.fork("src", 3, sid, then=lambda copy: forked_revision(copy, "src", "t4"))
            _say(str(n))
            n += 1


if __name__ == "__main__":
    modes: dict[str, Callable[..., None]] = {"crash": crash, "race": race, "own": own,
                                             "forks": forks}
    modes[sys.argv[1]](*sys.argv[2:])
