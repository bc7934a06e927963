"""The SQLite backend of the state store: WAL file, compare-and-set commits, field-level
deltas with periodic snapshots, content-addressed blobs, the hash chain, group commit,
cached reads, and the maintenance behind fsck and compact.

May import ``state``'s backend-neutral modules (model, store protocol, codec, errors);
never ``fsm`` or ``skills``. Users import :class:`SQLiteStore` from here or from ``state``.
"""

from claimfsm.state.sqlite.store import SQLiteStore

__all__ = [
    "SQLiteStore",
]
