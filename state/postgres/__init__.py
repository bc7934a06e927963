"""The PostgreSQL backend of the state store (``--db postgresql://...``): the row format,
hash chain and blobs of the SQLite backend, with compare-and-set commits that many
worker processes and machines share.

May import ``state`` and the SQLite backend's row codec (``claimfsm.state.sqlite``); never ``fsm``
or ``skills``. Needs the ``postgres`` extra (psycopg 3), imported only when a URL is
opened, so the embedded default works without it.
"""

from claimfsm.state.postgres.db import StoreUnavailable
from claimfsm.state.postgres.store import PostgresStore

__all__ = ["PostgresStore", "StoreUnavailable"]
