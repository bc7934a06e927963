"""claimfsm's engine core: the machine, the driver, bindings, limits and the runtime.

The machine definition and its ``transitions`` façade (``machine``, ``firing``; its
definition checks in ``soundness``), the driver that fires every move and is the only
writer of state (``driver``, ``step``; its start, rollback and fork in ``lifecycle``, the
next state a step commits in ``fold``), skill bindings (``bindings``; the
claim-verification machine's in ``claim_io``), per-session limits (``limits``), the
engine's errors, the custom-machine API (``api``), the verification profile (``profile``)
and how a session's stored config reads (``settings``), the built-in engine that wires a
store, the evidence index and a driver (``runtime``; the tools it gives the driver in
``toolset``) with its one configuration value (``config``) and the JSON views (``views``).
The core may import ``claimfsm._base``, ``claimfsm.skills`` and ``claimfsm.state``; its
tools (``claimfsm.replay``, ``testing``, ``eval``, ``bench``, ``batch``, ``ui`` and, on top
of them all, ``cli``) import the core, never the other way. ``tests/test_layers.py``
enforces these arrows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm.engine.api import (
        MemoryInput,
        MemoryOutput,
        Workflow,
        define_machine,
        linear,
        skill,
    )
    from claimfsm.engine.async_driver import AsyncDriver
    from claimfsm.engine.async_runtime import AsyncEngine
    from claimfsm.engine.bindings import Binding
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.driver import Driver, StepResult
    from claimfsm.engine.limits import SessionLimits
    from claimfsm.engine.machine import DEFAULT_MACHINE, Machine, MachineDef, RetryPolicy, StateSpec
    from claimfsm.engine.profile import Profile
    from claimfsm.engine.runtime import Engine

__all__ = [
    "DEFAULT_MACHINE",
    "AsyncDriver",
    "AsyncEngine",
    "Binding",
    "Driver",
    "Engine",
    "EngineConfig",
    "Machine",
    "MachineDef",
    "MemoryInput",
    "MemoryOutput",
    "Profile",
    "RetryPolicy",
    "SessionLimits",
    "StateSpec",
    "StepResult",
    "Workflow",
    "define_machine",
    "linear",
    "skill",
]

__getattr__ = lazy_exports(__name__, {
    "MemoryInput": "claimfsm.engine.api", "MemoryOutput": "claimfsm.engine.api",
    "Workflow": "claimfsm.engine.api", "define_machine": "claimfsm.engine.api",
    "linear": "claimfsm.engine.api", "skill": "claimfsm.engine.api",
    "Binding": "claimfsm.engine.bindings", "EngineConfig": "claimfsm.engine.config",
    "Driver": "claimfsm.engine.driver",
    "StepResult": "claimfsm.engine.driver", "SessionLimits": "claimfsm.engine.limits",
    "DEFAULT_MACHINE": "claimfsm.engine.machine", "Machine": "claimfsm.engine.machine",
    "MachineDef": "claimfsm.engine.machine", "RetryPolicy": "claimfsm.engine.machine",
    "StateSpec": "claimfsm.engine.machine", "Profile": "claimfsm.engine.profile",
    "Engine": "claimfsm.engine.runtime",
    "AsyncDriver": "claimfsm.engine.async_driver", "AsyncEngine": "claimfsm.engine.async_runtime",
})
