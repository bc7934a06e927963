"""The session-state model and the revision-stamped stores (SQLite default, in-memory).

Imports neither ``fsm`` nor ``skills``. The reusable store test suite lives in
:mod:`state.contract` (it needs pytest, so it is not imported here).
"""

from typing import TYPE_CHECKING

# Eager: the function ``fsck`` shares its name with its module, which importing the
# module would otherwise leave in its place.
from state.fsck import FsckProblem, FsckReport, fsck

if TYPE_CHECKING:
    from state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
    from state.memory import MemoryStore
    from state.model import TOOL_SLICE, RetryState, Revision, SessionState
    from state.rollback import entry_state, rewind_revision, tools_restored
    from state.sqlite.db import ChainBroken, CorruptStore, StoreBusy
    from state.sqlite.store import SQLiteStore
    from state.store import ChainCheck, CompactReport, StateStore

__all__ = [
    "TOOL_SLICE",
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
    "UnknownRevision",
    "UnknownSession",
    "entry_state",
    "fsck",
    "rewind_revision",
    "tools_restored",
]


# Where each name lives, imported on first use: importing any ``state.X`` runs this
# package first, and a command that reads one SQLite file need not load the in-memory
# store, rollback, the catalog's models or the SQLite backend before it asks for them.
_WHERE = {
    "RevConflict": "errors", "StoreError": "errors", "UnknownRevision": "errors",
    "UnknownSession": "errors", "MemoryStore": "memory", "TOOL_SLICE": "model",
    "RetryState": "model", "Revision": "model", "SessionState": "model", "entry_state": "rollback",
    "rewind_revision": "rollback", "tools_restored": "rollback", "ChainBroken": "sqlite.db",
    "CorruptStore": "sqlite.db", "StoreBusy": "sqlite.db", "SQLiteStore": "sqlite.store",
    "ChainCheck": "store", "CompactReport": "store", "StateStore": "store",
    "SessionSummary": "catalog", "SummaryPage": "catalog", "SummaryQuery": "catalog",
}


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'state' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"state.{where}"), name)
