"""The benchmark behind ``claimfsm bench``: the no-op workflow of docs/api.md, the
measured cases (step cost per store and durability, reads, history, replay, bytes,
memory) and the goal table.

Part of fsm's tools: it may import the engine core, ``fsm.replay``, ``fsm.testing``,
``skills`` and ``state``; never ``fsm.cli`` or ``fsm.eval``.
"""

from __future__ import annotations

import importlib
from typing import Any

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "BenchConfig": "fsm.bench.run",
    "BenchReport": "fsm.bench.run",
    "GOALS": "fsm.bench.run",
    "KEYS": "fsm.bench.run",
    "LOOP": "fsm.bench.workflow",
    "LOOP_STEPS": "fsm.bench.workflow",
    "MOVES": "fsm.bench.workflow",
    "PIPELINE": "fsm.bench.workflow",
    "PIPELINE_STEPS": "fsm.bench.cases",
    "STAGES": "fsm.bench.workflow",
    "bytes_noop": "fsm.bench.cases",
    "collect": "fsm.bench.workflow",
    "format_table": "fsm.bench.run",
    "group_commit_us": "fsm.bench.cases",
    "history_us": "fsm.bench.cases",
    "loop_session": "fsm.bench.cases",
    "peak_mb_per_1000": "fsm.bench.cases",
    "realistic": "fsm.bench.cases",
    "replay_steps_per_s": "fsm.bench.cases",
    "rev_read_cached_us": "fsm.bench.cases",
    "rev_read_us": "fsm.bench.cases",
    "run_bench": "fsm.bench.run",
    "stage": "fsm.bench.workflow",
    "steps_us": "fsm.bench.cases",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
