"""pytest plugin (entry point ``pytest11``): claimfsm's testing toolkit as fixtures.

Installed with claimfsm, so any test suite in the environment can ask for:

- ``claimfsm_clock``: a :class:`~claimfsm.skills.context.FixedClock` at 2026-01-01T00:00:00Z;
- ``claimfsm_ids``: a :class:`~claimfsm.skills.context.SeqIds` id source;
- ``claimfsm_store``: an empty in-memory store (closed after the test);
- ``claimfsm_run_skill``: :func:`claimfsm.testing.toolkit.run_skill` on that clock and id source;
- ``claimfsm_step_once``: :func:`claimfsm.testing.toolkit.step_once` on that clock;
- ``claimfsm_tools``: an empty :class:`claimfsm.testing.toolkit.ScriptedTools` (set ``responses``);
- ``claimfsm_driver``: a factory ``(machine=DEFAULT_MACHINE, scripts=None, **kw)`` for a
  scripted driver over the store and clock above;
- ``claimfsm_replay``: ``(path, mode="strict", **kw)`` -> a replay report.

The toolkit is imported when a fixture is first used, so suites that use none of them
pay nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from claimfsm.engine.driver import Driver
    from claimfsm.replay.runner import ReplayReport
    from claimfsm.skills.context import FixedClock, SeqIds
    from claimfsm.skills.envelope import Envelope
    from claimfsm.state.memory import MemoryStore
    from claimfsm.testing.toolkit import ScriptedTools

__all__ = [
    "claimfsm_clock",
    "claimfsm_driver",
    "claimfsm_ids",
    "claimfsm_replay",
    "claimfsm_run_skill",
    "claimfsm_step_once",
    "claimfsm_store",
    "claimfsm_tools",
]


@pytest.fixture
def claimfsm_clock() -> FixedClock:
    """A fixed clock at 2026-01-01T00:00:00Z that moves only when told to."""
    from claimfsm.skills.context import FixedClock

    return FixedClock()


@pytest.fixture
def claimfsm_ids() -> SeqIds:
    """Deterministic ids: ``next("t")`` -> ``t1``, ``t2``, ..."""
    from claimfsm.skills.context import SeqIds

    return SeqIds()


@pytest.fixture
def claimfsm_store() -> Iterator[MemoryStore]:
    """An empty in-memory session store."""
    from claimfsm.state.memory import MemoryStore

    store = MemoryStore()
    yield store
    store.close()


@pytest.fixture
def claimfsm_run_skill(
    claimfsm_clock: FixedClock, claimfsm_ids: SeqIds
) -> Callable[..., Envelope]:
    """``run_skill(skill_or_name, input, **kw)`` with the fixture clock and ids."""
    from claimfsm.testing.toolkit import run_skill

    def run(skill: Any, input: Any, **kw: Any) -> Envelope:
        kw.setdefault("clock", claimfsm_clock)
        kw.setdefault("ids", claimfsm_ids)
        return run_skill(skill, input, **kw)

    return run


@pytest.fixture
def claimfsm_step_once(claimfsm_clock: FixedClock) -> Callable[..., tuple[Envelope, str]]:
    """``step_once(fsm, session_state=None, **kw)`` -> ``(envelope, next state)``."""
    from claimfsm.testing.toolkit import step_once

    def fire(fsm: str, session_state: Any = None, **kw: Any) -> tuple[Envelope, str]:
        kw.setdefault("clock", claimfsm_clock)
        return step_once(fsm, session_state, **kw)

    return fire


@pytest.fixture
def claimfsm_tools() -> ScriptedTools:
    """A scripted tool caller with no answers yet (``claimfsm_tools.responses[...] = ...``)."""
    from claimfsm.testing.toolkit import ScriptedTools

    return ScriptedTools()


@pytest.fixture
def claimfsm_driver(
    claimfsm_store: MemoryStore, claimfsm_clock: FixedClock
) -> Callable[..., Driver]:
    """A factory for scripted drivers over ``claimfsm_store`` and ``claimfsm_clock``."""
    from claimfsm.engine.machine import DEFAULT_MACHINE
    from claimfsm.testing.toolkit import scripted_driver

    def make(machine: Any = DEFAULT_MACHINE, scripts: Any = None, **kw: Any) -> Driver:
        kw.setdefault("store", claimfsm_store)
        kw.setdefault("clock", claimfsm_clock)
        return scripted_driver(machine, scripts, **kw)

    return make


@pytest.fixture
def claimfsm_replay() -> Callable[..., ReplayReport]:
    """``replay(path, mode="strict", **kw)``: read a record file and replay it."""
    from claimfsm.replay.record import read_record
    from claimfsm.replay.runner import replay_record

    def replay(path: str | Path, mode: Any = "strict", **kw: Any) -> ReplayReport:
        return replay_record(read_record(path), mode, **kw)

    return replay
