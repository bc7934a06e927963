"""One claim to its end, safe to run again: what every batch worker (a Ray task or the
command's own process) runs.

Exactly-once revisions under at-least-once execution: a claim's session id is fixed by
the input line, so an attempt first reads the head. A DONE session is skipped, one
mid-way resumes from its head (never from revision 0), and a compare-and-set miss (a
retried task racing the attempt it replaces) reloads the head and carries on instead of
failing. Every commit is a compare-and-set, so no revision lands twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsm.batch.claims import BatchClaim
from fsm.driver import StepResult
from fsm.profile import Profile
from fsm.runtime import Engine
from state.errors import RevConflict, StoreError, UnknownSession

__all__ = ["ClaimRunner", "verify_chunk", "warm"]

# Each reload follows a commit another attempt made, so this bounds nothing in practice;
# it only stops a livelock from spinning forever.
_RELOADS = 100


class ClaimRunner:
    """An engine opened once (per worker process) and the last step's outcome."""

    def __init__(self, db: str | None, profile: Profile | None = None) -> None:
        self.last_code: str | None = None
        self.engine = Engine.open(db, on_step=self._seen, profile=profile)

    def _seen(self, result: StepResult) -> None:
        error = result.envelope.e
        self.last_code = None if result.committed or error is None else error.code

    def close(self) -> None:
        """Close the engine."""
        self.engine.close()

    def run(self, item: BatchClaim) -> dict[str, Any]:
        """Drive ``item``'s session to a final state; returns its result line."""
        store, driver = self.engine.store, self.engine.driver
        finals = driver.definition.finals
        sid = item.sid
        try:
            head = store.head(sid)
        except UnknownSession:
            try:
                head = driver.start(item.claim, sid=sid, config=self.engine.profile.config())
            except RevConflict:  # another attempt of this claim created it first
                head = store.head(sid)
        first = head.rev
        if head.fsm in finals:
            status = "skipped"
        else:
            for _ in range(_RELOADS):
                self.last_code = None
                head = driver.run(sid)
                if head.fsm in finals or self.last_code != "REV_CONFLICT":
                    break
            status = "resumed" if first > 0 else "done"
            if head.fsm != "DONE":
                status = "failed"
        verdict = head.state.verdict["label"] if head.state.verdict else None
        out: dict[str, Any] = {"id": item.id, "sid": sid, "verdict": verdict, "rev": head.rev,
                               "fsm": head.fsm, "status": status, "from_rev": first}
        if head.state.error:
            out["error"] = head.state.error
        elif status == "failed" and self.last_code:
            out["error"] = {"code": self.last_code, "msg": "the last step did not commit"}
        return out


_RUNNERS: dict[tuple[str, str], ClaimRunner] = {}


def _runner(db: str, profile: dict[str, Any] | None) -> ClaimRunner:
    key = (db, repr(sorted((profile or {}).items())))
    runner = _RUNNERS.get(key)
    if runner is None:
        runner = _RUNNERS[key] = ClaimRunner(db, Profile(**profile) if profile else None)
    return runner


def _drop(db: str, profile: dict[str, Any] | None) -> None:
    runner = _RUNNERS.pop((db, repr(sorted((profile or {}).items()))), None)
    if runner is not None:
        runner.close()


def warm(db: str, profile: dict[str, Any] | None = None) -> int:
    """Open this process's engine for ``db`` ahead of the first chunk; returns the pid."""
    import os

    _runner(db, profile)
    return os.getpid()


def verify_chunk(
    db: str, items: Sequence[tuple[str | int, str]], profile: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run each ``(id, claim)`` of ``items`` on ``db`` with the verification ``profile``
    (a :class:`~fsm.profile.Profile` as a dict; the body of a Ray task).

    The engine is opened once per process and kept, so a worker pays for its connection
    and evidence index once, not per task. A store error for one claim becomes that
    claim's ``status: "error"`` line; the others still run.
    """
    runner = _runner(db, profile)
    out = []
    for claim_id, text in items:
        item = BatchClaim(id=claim_id, claim=text)
        try:
            out.append(runner.run(item))
        except StoreError as exc:
            _drop(db, profile)  # its connection may be the broken part: reopen
            runner = _runner(db, profile)
            out.append({"id": claim_id, "sid": item.sid, "verdict": None, "rev": None,
                        "fsm": None, "status": "error",
                        "error": {"code": exc.code, "msg": exc.msg}})
    return out
