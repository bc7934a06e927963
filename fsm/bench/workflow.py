"""The benchmark's no-op workflow: a 6-state linear machine built with the public API.

The block between the ``api.md`` markers is the example in ``docs/api.md``, verbatim
(a test checks it), so the benchmark measures exactly what a user would write.
"""

from __future__ import annotations

# --- api.md: begin ---
from collections.abc import Callable

from claimfsm import Envelope, MemoryInput, SkillContext, define_machine, linear, skill

STAGES = ("FETCH", "CLEAN", "SCORE", "RANK", "REPORT", "PUBLISH")


def stage(to: str) -> Callable[[MemoryInput, SkillContext], Envelope]:
    """A handler that counts the step and moves on to ``to`` (trivial work)."""

    def run(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok(to, n=inp.memory.get("n", 0) + 1)

    return run


MOVES = linear(STAGES)  # FETCH -> CLEAN -> ... -> PUBLISH -> DONE
PIPELINE = define_machine(
    "pipeline",
    states={**{s: skill(s.lower())(stage(to)) for s, to in MOVES}, "DONE": None},
    transitions=MOVES,
)
# --- api.md: end ---



@skill("collect")
def collect(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    """Trivial work in a loop: count, and record one small value per step."""
    n = inp.memory.get("n", 0) + 1
    return inp.ok("DONE" if n >= LOOP_STEPS else "COLLECT", n=n, **{f"k{n}": n * 7})


#: Steps of a :data:`LOOP` session (the ``history_100`` and ``rev_read`` workload).
LOOP_STEPS = 100
LOOP = define_machine(
    "collect", states={"COLLECT": collect, "DONE": None},
    transitions=[("COLLECT", "COLLECT"), ("COLLECT", "DONE")],
)

__all__ = ["LOOP", "LOOP_STEPS", "MOVES", "PIPELINE", "STAGES", "collect", "stage"]
