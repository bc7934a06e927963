"""The benchmark behind ``claimfsm bench``: the no-op workflow of docs/api.md, the
measured cases (step cost per store and durability, reads, history, replay, bytes,
memory) and the goal table.

Part of fsm's tools: it may import the engine core, ``claimfsm.replay``, ``claimfsm.testing``,
``skills`` and ``state``; never ``claimfsm.cli`` or ``claimfsm.eval``.
"""

from __future__ import annotations

from claimfsm._base.lazy import lazy_exports

# Re-exported on first use (PEP 562): importing the package stays cheap for the
# commands that never need it.
_WHERE = {
    "BenchConfig": "claimfsm.bench.run",
    "BenchReport": "claimfsm.bench.run",
    "GOALS": "claimfsm.bench.run",
    "KEYS": "claimfsm.bench.run",
    "LOOP": "claimfsm.bench.workflow",
    "LOOP_STEPS": "claimfsm.bench.workflow",
    "MOVES": "claimfsm.bench.workflow",
    "PIPELINE": "claimfsm.bench.workflow",
    "PIPELINE_STEPS": "claimfsm.bench.cases",
    "STAGES": "claimfsm.bench.workflow",
    "bytes_noop": "claimfsm.bench.cases",
    "collect": "claimfsm.bench.workflow",
    "format_table": "claimfsm.bench.run",
    "group_commit_us": "claimfsm.bench.cases",
    "history_us": "claimfsm.bench.cases",
    "loop_session": "claimfsm.bench.cases",
    "peak_mb_per_1000": "claimfsm.bench.cases",
    "realistic": "claimfsm.bench.cases",
    "replay_steps_per_s": "claimfsm.bench.cases",
    "rev_read_cached_us": "claimfsm.bench.cases",
    "rev_read_us": "claimfsm.bench.cases",
    "run_bench": "claimfsm.bench.run",
    "stage": "claimfsm.bench.workflow",
    "steps_us": "claimfsm.bench.cases",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE)
