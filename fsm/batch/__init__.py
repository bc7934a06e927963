"""Batch verification: one session per line of a claims file, on Ray workers sharing one
store (PostgreSQL, or a SQLite file on one machine) or in this process, resumable and
exactly-once in its revisions.

A tool on the engine core, like ``claimfsm.replay``: it may import the core, ``skills`` and
``state``; only ``claimfsm.cli`` imports it. Ray is optional (the ``ray`` extra) and imported
only when a batch runs on it.
"""

from claimfsm.batch.claims import (
    BatchClaim,
    BatchInputError,
    Claims,
    ClaimsFile,
    read_claims,
    session_id,
)
from claimfsm.batch.runner import BatchSummary, chunked, run_batch
from claimfsm.batch.worker import ClaimRunner, verify_chunk

__all__ = [
    "BatchClaim",
    "BatchInputError",
    "BatchSummary",
    "ClaimRunner",
    "Claims",
    "ClaimsFile",
    "chunked",
    "read_claims",
    "run_batch",
    "session_id",
    "verify_chunk",
]
