"""A child process for the PostgreSQL concurrency tests (``python -m tests.support.pg_worker``).

- ``race URL SID LAST WRITER GO``: print ``ready``; once file ``GO`` exists, race the
  other writers on ``SID`` until its head reaches ``LAST``; print ``W rev`` per win and
  ``C rev`` per :class:`RevConflict`. Every fourth revision adds a page whose text is the
  same for every writer, so racing commits also race on inserting one blob.
- ``own URL SID LAST GO``: print ``ready``; once ``GO`` exists, create ``SID`` and commit
  revisions ``1..LAST`` (pages shared with the other owners); print ``done``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from claimfsm.state.errors import RevConflict
from claimfsm.state.model import Revision, SessionState

PAGE = "A page every writer fetches ✓ " * 20


def revision(sid: str, rev: int, state: SessionState) -> Revision:
    """Revision ``rev`` of ``sid`` holding ``state``."""
    return Revision(sid=sid, rev=rev, parent_rev=None if rev == 0 else rev - 1, fsm=state.fsm,
                    skill=None if rev == 0 else "step", envelope=None, state=state,
                    ts=f"t{rev}")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _wait_for(path: str) -> None:
    _say("ready")
    while not os.path.exists(path):
        time.sleep(0.001)


def _next(state: SessionState, rev: int, writer: str) -> SessionState:
    update: dict[str, object] = {"memory": {"writer": writer}, "rounds": rev}
    if rev % 4 == 0:
        update["pages"] = {**state.pages, f"p{rev}": {"text": PAGE + str(rev)}}
    return state.model_copy(update=update)


def race(url: str, sid: str, last: str, writer: str, go: str) -> None:
    from claimfsm.state.postgres import PostgresStore  # here: the test imports this module too

    with PostgresStore(url) as store:
        _wait_for(go)
        while True:
            head = store.head(sid)
            if head.rev >= int(last):
                return
            rev = head.rev + 1
            try:
                store.commit(revision(sid, rev, _next(head.state, rev, writer)),
                             expected_rev=head.rev)
            except RevConflict:
                _say(f"C {rev}")
            else:
                _say(f"W {rev}")


def own(url: str, sid: str, last: str, go: str) -> None:
    from claimfsm.state.postgres import PostgresStore

    with PostgresStore(url) as store:
        _wait_for(go)
        state = SessionState(sid=sid, claim="own", fsm="PARSE_CLAIM")
        store.create(revision(sid, 0, state))
        for rev in range(1, int(last) + 1):
            state = _next(state, rev, "owner").model_copy(
                update={"steps": [*state.steps, {"n": rev}]})
            store.commit(revision(sid, rev, state), expected_rev=rev - 1)
        _say("done")


if __name__ == "__main__":
    modes: dict[str, Callable[..., None]] = {"race": race, "own": own}
    modes[sys.argv[1]](*sys.argv[2:])
