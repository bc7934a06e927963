"""Two versions of one small custom machine, for the versioning tests.

Version 1 runs ``A -> B -> DONE``; version 2 renamed ``B`` to ``C`` (a session waiting
in ``B`` has a state version 2 does not have) and migrates version 1's sessions: ``B``
becomes ``C`` and memory records the migration. ``python -m tests.support.versions DB
WORKER GO SID...`` runs version 2 over the sessions once the file ``GO`` exists (a racing
worker) and prints ``M sid`` for each migration it committed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from claimfsm.engine.api import MemoryInput, Workflow, define_machine, skill
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.model import SessionState

__all__ = ["V1", "V2", "migrate_b_to_c", "v2_with"]


@skill("a")
def _a(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    return inp.ok("B", a=1)


@skill("b")
def _b(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    return inp.ok("DONE", b=1)


@skill("a", version="2")
def _a2(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    return inp.ok("C", a=1)


@skill("c", version="2")
def _c(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    return inp.ok("DONE", c=1)


V1: Workflow = define_machine("versioned", states={"A": _a, "B": _b, "DONE": None},
                              transitions=[("A", "B"), ("B", "DONE")])


def migrate_b_to_c(state: SessionState) -> SessionState:
    """Version 1 -> 2: ``B`` is now ``C``."""
    fsm = "C" if state.fsm == "B" else state.fsm
    return state.model_copy(update={"fsm": fsm, "memory": {**state.memory, "migrated": 1}})


def v2_with(migrations: dict[str, Any] | None = None) -> Workflow:
    """Version 2, with ``migrations`` (default: from :data:`V1`)."""
    chosen = {V1.version: migrate_b_to_c} if migrations is None else migrations
    return define_machine("versioned", states={"A": _a2, "C": _c, "DONE": None},
                          transitions=[("A", "C"), ("C", "DONE")], migrations=chosen)


V2: Workflow = v2_with()


def _race(db: str, worker: str, go: str, sids: list[str]) -> None:
    from claimfsm.state.open import open_store

    store = open_store(db)
    try:
        print("ready", flush=True)
        while not Path(go).exists():
            time.sleep(0.005)
        seen = []
        driver = V2.driver(store, on_step=lambda r: seen.append(r))
        for sid in sids:
            driver.run(sid)
        for result in seen:
            if result.skill == "migrate" and result.committed:
                print(f"M {result.sid}", flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    _race(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
