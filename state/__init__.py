"""The session-state model and the revision-stamped stores (SQLite default, in-memory;
their async contract for asyncio applications in ``aio``).

Imports neither ``fsm`` nor ``skills``. The reusable store test suite lives in
:mod:`claimfsm.state.contract` (it needs pytest, so it is not imported here).
"""

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

# Eager: the function ``fsck`` shares its name with its module, which importing the
# module would otherwise leave in its place.
from claimfsm.state.fsck import FsckProblem, FsckReport, fsck

if TYPE_CHECKING:
    from claimfsm.state.aio import AsyncStore, ThreadedStore
    from claimfsm.state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
    from claimfsm.state.memory import MemoryStore
    from claimfsm.state.model import TOOL_SLICE, RetryState, Revision, SessionState
    from claimfsm.state.rollback import entry_state, rewind_revision, tools_restored
    from claimfsm.state.sqlite.db import ChainBroken, CorruptStore, StoreBusy
    from claimfsm.state.sqlite.store import SQLiteStore
    from claimfsm.state.store import ChainCheck, CompactReport, StateStore

__all__ = [
    "TOOL_SLICE",
    "AsyncStore",
    "ChainBroken",
    "ChainCheck",
    "CompactReport",
    "CorruptStore",
    "FsckProblem",
    "FsckReport",
    "MemoryStore",
    "RetryState",
    "RevConflict",
    "Revision",
    "SQLiteStore",
    "SessionState",
    "SessionSummary",
    "StateStore",
    "StoreBusy",
    "StoreError",
    "SummaryPage",
    "SummaryQuery",
    "ThreadedStore",
    "UnknownRevision",
    "UnknownSession",
    "entry_state",
    "fsck",
    "rewind_revision",
    "tools_restored",
]


# Where each name lives, imported on first use: importing any ``claimfsm.state.X`` runs
# this package first, and a command that reads one SQLite file need not load the
# in-memory store, rollback, the catalog's models or the SQLite backend before it asks.
_WHERE = {k: f"claimfsm.state.{v}" for k, v in {
    "RevConflict": "errors", "StoreError": "errors", "UnknownRevision": "errors",
    "UnknownSession": "errors", "MemoryStore": "memory", "TOOL_SLICE": "model",
    "RetryState": "model", "Revision": "model", "SessionState": "model", "entry_state": "rollback",
    "rewind_revision": "rollback", "tools_restored": "rollback", "ChainBroken": "sqlite.db",
    "CorruptStore": "sqlite.db", "StoreBusy": "sqlite.db", "SQLiteStore": "sqlite.store",
    "ChainCheck": "store", "CompactReport": "store", "StateStore": "store",
    "AsyncStore": "aio", "ThreadedStore": "aio",
    "SessionSummary": "catalog", "SummaryPage": "catalog", "SummaryQuery": "catalog",
}.items()}

__getattr__ = lazy_exports(__name__, _WHERE)
