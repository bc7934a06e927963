"""claimfsm: an explicit finite-state-machine workflow engine that verifies factual claims.

This is the front door: ``from claimfsm import define_machine, skill, Engine, ...`` gives
what a user needs to define a machine, bind skills, run sessions on a store and replay
them. Everything else is private (``_name`` modules) or lives in a documented subpackage:
``claimfsm.engine`` (machine, driver, bindings, runtime), ``claimfsm.skills`` (the skills
and their tool runtime), ``claimfsm.state`` (session state and stores), ``claimfsm.replay``,
``claimfsm.testing``, ``claimfsm.eval``, ``claimfsm.bench``, ``claimfsm.batch``,
``claimfsm.ui`` and ``claimfsm.cli``. Names load on first use, so ``import claimfsm`` (and
every ``claimfsm.X`` import, which runs this module first) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm.engine.api import MemoryInput, Workflow, define_machine, linear, skill, wait
    from claimfsm.engine.async_runtime import AsyncEngine
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.errors import ClaimFsmError, ErrorCode
    from claimfsm.engine.model_api import ask_model, model_tools
    from claimfsm.engine.profile import Profile
    from claimfsm.engine.runtime import Engine
    from claimfsm.replay.runner import replay_record
    from claimfsm.skills.context import SkillContext
    from claimfsm.skills.envelope import Envelope
    from claimfsm.skills.model_call import ModelFailure, ModelUse
    from claimfsm.state.memory import MemoryStore
    from claimfsm.state.postgres.store import PostgresStore
    from claimfsm.state.sqlite.store import SQLiteStore

__version__ = "0.2.0"

__all__ = [
    "AsyncEngine",
    "ClaimFsmError",
    "Engine",
    "EngineConfig",
    "Envelope",
    "ErrorCode",
    "MemoryInput",
    "MemoryStore",
    "ModelFailure",
    "ModelUse",
    "PostgresStore",
    "Profile",
    "SQLiteStore",
    "SkillContext",
    "Workflow",
    "__version__",
    "ask_model",
    "define_machine",
    "linear",
    "model_tools",
    "replay_record",
    "skill",
    "wait",
]

__getattr__ = lazy_exports(__name__, {
    "ClaimFsmError": "claimfsm.engine.errors",
    "ErrorCode": "claimfsm.engine.errors",
    "MemoryInput": "claimfsm.engine.api",
    "Workflow": "claimfsm.engine.api",
    "define_machine": "claimfsm.engine.api",
    "linear": "claimfsm.engine.api",
    "skill": "claimfsm.engine.api",
    "wait": "claimfsm.engine.api",
    "EngineConfig": "claimfsm.engine.config",
    "Profile": "claimfsm.engine.profile",
    "Engine": "claimfsm.engine.runtime",
    "AsyncEngine": "claimfsm.engine.async_runtime",
    "replay_record": "claimfsm.replay.runner",
    "SkillContext": "claimfsm.skills.context",
    "Envelope": "claimfsm.skills.envelope",
    "ModelFailure": "claimfsm.skills.model_call",
    "ModelUse": "claimfsm.skills.model_call",
    "ask_model": "claimfsm.engine.model_api",
    "model_tools": "claimfsm.engine.model_api",
    "MemoryStore": "claimfsm.state.memory",
    "PostgresStore": "claimfsm.state.postgres.store",
    "SQLiteStore": "claimfsm.state.sqlite.store",
})
