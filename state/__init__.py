"""The session-state model and the revision-stamped stores (SQLite default, in-memory).

Imports neither ``fsm`` nor ``skills``. The reusable store test suite lives in
:mod:`state.contract` (it needs pytest, so it is not imported here).
"""

from state.errors import RevConflict, StoreError, UnknownRevision, UnknownSession
from state.fsck import FsckProblem, FsckReport, fsck
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


def __getattr__(name: str) -> object:
    # The listing's models are built when a listing is asked for, not at every start-up.
    if name in ("SessionSummary", "SummaryPage", "SummaryQuery"):
        from state import catalog

        return getattr(catalog, name)
    raise AttributeError(name)
