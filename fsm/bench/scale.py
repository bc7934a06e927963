"""Two cases of ``claimfsm bench`` that look past the per-step average: whether a step and
a head read cost more deep into a long session (``rev10k_*_ratio``), and how long a
``claimfsm`` command takes as a process (``cli_step_ms``), beside the floor under it: a
process that only imports the libraries every command stands on (``meta.cli_floor_ms``).

Timings use ``time.perf_counter`` around the measured calls only; see ``docs/bench.md``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.engine.api import MemoryInput, define_machine, skill
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.sqlite.store import SQLiteStore

__all__ = ["CLI_FLOOR", "TICK", "cli_ms", "deep_session_ratios"]


@skill("tick")
def _tick(inp: MemoryInput, ctx: SkillContext) -> Envelope:
    """Count, staying in TICK: the state keeps the same size however long the session."""
    return inp.ok("TICK", n=inp.memory.get("n", 0) + 1)


#: One state that loops on itself (DONE is declared so the machine can end).
TICK = define_machine("tick", states={"TICK": _tick, "DONE": None},
                      transitions=[("TICK", "TICK"), ("TICK", "DONE")])


def _steps_us(store: SQLiteStore, sids: list[str], steps: int, clock: FixedClock) -> float:
    driver = TICK.driver(store, clock=clock)
    t0 = time.perf_counter()
    for sid in sids:
        for _ in range(steps):
            if not driver.step(sid).committed:
                raise ClaimFsmError(f"bench session {sid} did not commit", code=ErrorCode.INTERNAL)
    return (time.perf_counter() - t0) / (len(sids) * steps) * 1e6


def _head_us(store: SQLiteStore, sids: list[str]) -> float:
    samples = []
    for sid in sids:
        store.clear_cache()
        t0 = time.perf_counter()
        store.head(sid)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def deep_session_ratios(tmp: Path, depth: int = 10_000, rounds: int = 9) -> dict[str, float]:
    """Step time and cold head read at revision ``depth`` of one session, each divided by
    the same at revision 10 (fresh sessions), on one SQLite file (``normal``).

    Both sides are timed in alternating rounds (64 steps of a fresh session from
    revision 10, 64 steps of the deep one), so load from elsewhere hits them alike; each
    figure is the median of the rounds. The deep session starts at ``depth + 10``, so both
    sides sit at the same distance from their last snapshot when their heads are read.
    """
    clock = FixedClock(tick=timedelta(microseconds=1))
    with SQLiteStore(tmp / "deep.db") as store:
        driver = TICK.driver(store, clock=clock)
        deep = driver.start("bench").sid
        for _ in range(depth + 10):
            driver.step(deep)
        near, far, head_near, head_far = [], [], [], []
        for _ in range(rounds):
            fresh = driver.start("bench").sid
            for _ in range(10):
                driver.step(fresh)
            near.append(_steps_us(store, [fresh], 64, clock))
            far.append(_steps_us(store, [deep], 64, clock))
            head_near.append(_head_us(store, [fresh] * 4))
            head_far.append(_head_us(store, [deep] * 4))
        last = store.head(deep).rev
    step_10, step_deep = statistics.median(near), statistics.median(far)
    head_10, head_deep = statistics.median(head_near), statistics.median(head_far)
    return {"step_ratio": step_deep / step_10, "head_ratio": head_deep / head_10,
            "step_us_rev10": step_10, "step_us_deep": step_deep, "head_us_rev10": head_10,
            "head_us_deep": head_deep, "deep_rev": float(last)}


#: What any ``claimfsm`` command pays before the project's own code runs: the interpreter
#: and the libraries the design stands on (frozen pydantic models, click, orjson,
#: ``transitions``, sqlite3), with one model built and validated. Nothing of the project.
CLI_FLOOR = (
    "import sqlite3, orjson, click, transitions\n"
    "from pydantic import BaseModel, ConfigDict\n"
    "class M(BaseModel):\n"
    "    model_config = ConfigDict(frozen=True)\n"
    "    x: int = 0\n"
    "M(x=1)\n"
)
_COMMAND = "from claimfsm.cli import main; main()"


def _process_ms(code: str, args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def cli_ms(tmp: Path, sessions: int = 2, max_steps: int = 20) -> dict[str, float]:
    """Median wall milliseconds of ``claimfsm step SID --db FILE`` (every step of
    ``sessions`` demo claims, at most ``max_steps`` each, each a new process), of
    ``claimfsm show SID``, and of :data:`CLI_FLOOR` (``floor_ms``), on a database seeded
    with the demo corpus. The three run in turn, so load from elsewhere hits them alike.
    One untimed command first writes the bytecode cache, as the first run of any
    installation does; bytecode caching is on (as by default).
    """
    from claimfsm.engine.runtime import Engine

    db = str(tmp / "cli.db")
    with Engine.open(db) as eng:
        sids = [eng.start(claim).sid for claim in
                ("NASA landed on the Moon in 1969.", "The Eiffel Tower is in Berlin.")[:sessions]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as the CLI sets it for itself
    _process_ms(_COMMAND, ["show", sids[0], "--db", db], env)
    steps, shows, floors = [], [], []
    for sid in sids:
        for _ in range(max_steps):  # to DONE (a demo session takes 8-12 steps)
            steps.append(_process_ms(_COMMAND, ["step", sid, "--db", db], env))
            shows.append(_process_ms(_COMMAND, ["show", sid, "--db", db], env))
            floors.append(_process_ms(CLI_FLOOR, [], env))
            with SQLiteStore(db) as store:
                if store.head(sid).fsm in ("DONE", "FAILED"):
                    break
    return {"step_ms": statistics.median(steps), "show_ms": statistics.median(shows),
            "floor_ms": statistics.median(floors), "steps": float(len(steps))}
